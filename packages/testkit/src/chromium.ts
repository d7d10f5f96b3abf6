// Flags for the Debian Chromium (/usr/bin/chromium) that browser tests drive with playwright-core:
// headless, no sandbox (containers), and nothing that phones home or downloads components, so a
// test never needs the network (NOTES.md: never let a tool download its own browser).
export const CHROMIUM_EXECUTABLE = '/usr/bin/chromium';
export const CHROMIUM_FLAGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
