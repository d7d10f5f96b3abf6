// Prints the web UI's figures for a closing note, measured as performance.test.ts measures them:
// a real builtin-mode svcd and agent, the Debian Chromium, 1,000 registered applications, about
// 100 events/s from real processes.
//
//   npx node packages/web/scripts/measure.ts [--apps N] [--events-per-second N] [--seconds N]
import { parseArgs } from 'node:util';
import { startWebHarness } from '../test/harness.ts';
import { kb, measureFirstLoad, measureFrameRate, registerApps, startEventStorm } from '../test/measure.ts';

const { values } = parseArgs({
  options: {
    apps: { type: 'string', default: '1000' },
    'events-per-second': { type: 'string', default: '100' },
    seconds: { type: 'string', default: '15' },
  },
});
const apps = Number(values.apps);
const perSecond = Number(values['events-per-second']);
const seconds = Number(values.seconds);
if (![apps, perSecond, seconds].every((n) => Number.isInteger(n) && n > 0 && n <= 10_000)) {
  process.stderr.write('usage: measure.ts [--apps N] [--events-per-second N] [--seconds N] (1..10000)\n');
  process.exit(2);
}

const web = await startWebHarness();
try {
  const names = await registerApps(web, apps);
  const page = await web.newPage();
  await web.signIn(page, 'svc-admin');
  const load = await measureFirstLoad(web, page);
  console.log(`first load (signed in, empty cache, ${apps} apps):`);
  for (const file of load.scripts)
    console.log(
      `  ${file.path.padEnd(36)} ${kb(file.bytes).padStart(9)} raw ${kb(file.gzip).padStart(9)} gzip`,
    );
  console.log(
    `  JavaScript: ${load.scripts.length} files, ${kb(load.bytes)} raw, ${kb(load.gzip)} gzip, ${kb(load.brotli)} brotli`,
  );
  console.log(`  time to first list: ${Math.round(load.timeToFirstListMs)} ms`);
  const storm = await startEventStorm(web, names, perSecond);
  const frames = await measureFrameRate(page, seconds * 1000).catch(async (error: unknown) => {
    await storm.stop();
    throw error;
  });
  const rate = await storm.stop();
  console.log(
    `list under events: ${frames.fps.toFixed(1)} fps (longest frame ${Math.round(frames.longestFrameMs)} ms) ` +
      `with ${apps} apps and ${rate.perSecond.toFixed(0)} events/s published over ${rate.seconds.toFixed(0)} s`,
  );
} finally {
  await web.close();
}
