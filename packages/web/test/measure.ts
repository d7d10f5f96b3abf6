// The web UI's figures, measured in a real Chromium against the harness's real daemon and agent:
// the compressed size of the JavaScript the first load fetches, the time from navigation to the
// first application row, and the list's frame rate while events arrive. Used by
// performance.test.ts (which asserts only the hard limit, 150 KB) and scripts/measure.ts
// (which prints the figures for the closing note).
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
import type { Page, Response } from 'playwright-core';
import { connect, type SubscriptionEvent, type SvcClient } from '@svc/client';
import { waitFor } from '@svc/testkit';
import type { WebHarness } from './harness.ts';

/** The hard limit: first load of the app shell under 150 KB of compressed JavaScript. */
export const SHELL_JS_LIMIT_BYTES = 150 * 1024;

/** An application row of the live list (web-ui's app-list view). */
export const APP_ROW = 'tr[data-app]';

export interface ScriptFile {
  path: string;
  bytes: number;
  gzip: number;
  brotli: number;
  /** The Content-Encoding the agent answered with, if any. */
  encoding: string | undefined;
}

export interface FirstLoad {
  /** Every JavaScript file fetched from navigation until the first application row showed. */
  scripts: ScriptFile[];
  bytes: number;
  gzip: number;
  brotli: number;
  /** Navigation (page.goto) to the first application row visible, signed in already. */
  timeToFirstListMs: number;
}

function compressed(body: Buffer): { gzip: number; brotli: number } {
  return {
    gzip: gzipSync(body, { level: 9 }).length,
    brotli: brotliCompressSync(body, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } }).length,
  };
}

/** Collects the JavaScript responses of `page` from now on; `done()` waits for their bodies. */
export function collectScripts(page: Page): { done(): Promise<ScriptFile[]> } {
  const pending: Promise<ScriptFile | undefined>[] = [];
  const onResponse = (response: Response): void => {
    const type = response.headers()['content-type'] ?? '';
    if (!/javascript/.test(type) || response.status() !== 200) return;
    pending.push(
      response.body().then(
        (body) => ({
          path: new URL(response.url()).pathname,
          bytes: body.length,
          ...compressed(body),
          encoding: response.headers()['content-encoding'],
        }),
        () => undefined,
      ),
    );
  };
  page.on('response', onResponse);
  return {
    async done() {
      page.off('response', onResponse);
      const files = (await Promise.all(pending)).filter((f): f is ScriptFile => f !== undefined);
      const unique = new Map(files.map((f) => [f.path, f]));
      return [...unique.values()];
    },
  };
}

/**
 * The first load as a signed-in operator sees it: `page` is signed in (the provider's session
 * cookie lives in its context), its HTTP cache is cleared, and the UI is opened afresh; the figure
 * ends when the first application row is visible (at least one application must be registered).
 */
export async function measureFirstLoad(web: WebHarness, page: Page): Promise<FirstLoad> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.clearBrowserCache');
  await cdp.detach();
  await page.goto('about:blank');
  const scripts = collectScripts(page);
  const started = performance.now();
  await page.goto(`${web.url}/`);
  await page.locator(APP_ROW).first().waitFor({ timeout: 60_000 });
  const timeToFirstListMs = performance.now() - started;
  const files = await scripts.done();
  const sum = (key: 'bytes' | 'gzip' | 'brotli'): number => files.reduce((total, f) => total + f[key], 0);
  return {
    scripts: files,
    bytes: sum('bytes'),
    gzip: sum('gzip'),
    brotli: sum('brotli'),
    timeToFirstListMs,
  };
}

/** Registers `count` disabled applications `${prefix}-0000…` (no process runs) as svc-admin. */
export async function registerApps(web: WebHarness, count: number, prefix = 'load'): Promise<string[]> {
  const names = Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(4, '0')}`);
  const api = web.api('svc-admin');
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < names.length) {
      const name = names[next++]!;
      const answer = await api.call('PUT', `/svc/app/${name}`, {
        body: { name, command: 'sleep 600', enabled: false, description: `load app ${name}` },
      });
      if (answer.status !== 200)
        throw new Error(`registering ${name} answered ${answer.status}: ${answer.text()}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return names;
}

export interface EventStorm {
  /** Events the daemon published while the storm ran (seen by a subscriber of its own). */
  readonly delivered: number;
  /** Makes the ticking apps plain disabled ones again and closes the subscriber. */
  stop(): Promise<{ events: number; seconds: number; perSecond: number }>;
}

/**
 * About `perSecond` application events per second from real processes: the first `perSecond / 2`
 * apps of `names` (the top of the list sorted by name) are re-registered as periodic apps running
 * `true` every second, each run publishing a START and an EXIT. The rate actually published is
 * counted by a WSS subscriber of its own to every app's events.
 */
export async function startEventStorm(
  web: WebHarness,
  names: readonly string[],
  perSecond: number,
): Promise<EventStorm> {
  const subscriber: SvcClient = await connect({
    url: web.url,
    transport: 'wss',
    ca: web.daemon.ca,
    token: await web.token('svc-admin'),
  });
  let delivered = 0;
  await subscriber.subscribeAll(['START', 'EXIT', 'STATUS'], (event: SubscriptionEvent) => {
    if (event.event_type !== '__disconnected__') delivered += 1;
  });
  const api = web.api('svc-admin');
  const ticking = names.slice(0, Math.max(1, Math.round(perSecond / 2)));
  const define = async (enabled: boolean): Promise<void> => {
    for (const name of ticking) {
      const body = enabled
        ? { name, command: 'true', interval: 1, enabled: true, description: `ticks every second` }
        : { name, command: 'sleep 600', enabled: false, description: `load app ${name}` };
      const answer = await api.call('PUT', `/svc/app/${name}`, { body });
      if (answer.status !== 200) throw new Error(`re-registering ${name} answered ${answer.status}`);
    }
  };
  await define(true);
  const counted = delivered;
  const started = performance.now();
  return {
    get delivered() {
      return delivered - counted;
    },
    async stop() {
      const seconds = (performance.now() - started) / 1000;
      const events = delivered - counted;
      await define(false);
      await subscriber.close();
      return { events, seconds, perSecond: events / seconds };
    },
  };
}

export interface FrameRate {
  frames: number;
  seconds: number;
  fps: number;
  /** The longest gap between two animation frames, ms. */
  longestFrameMs: number;
}

/** Counts animation frames in `page` for `durationMs` (requestAnimationFrame in the page). */
export async function measureFrameRate(page: Page, durationMs: number): Promise<FrameRate> {
  return page.evaluate(
    (duration) =>
      new Promise<FrameRate>((resolve) => {
        // In the page (the test's tsconfig has no DOM types).
        const requestAnimationFrame = (
          globalThis as unknown as { requestAnimationFrame(callback: (now: number) => void): number }
        ).requestAnimationFrame.bind(globalThis);
        let frames = 0;
        let longest = 0;
        const start = performance.now();
        let last = start;
        const tick = (now: number): void => {
          frames += 1;
          longest = Math.max(longest, now - last);
          last = now;
          if (now - start < duration) requestAnimationFrame(tick);
          else {
            const seconds = (now - start) / 1000;
            resolve({ frames, seconds, fps: frames / seconds, longestFrameMs: longest });
          }
        };
        requestAnimationFrame(tick);
      }),
    durationMs,
  );
}

/** Waits until the daemon lists `count` applications named `${prefix}-…`. */
export async function waitForApps(web: WebHarness, prefix: string, count: number): Promise<void> {
  await waitFor(
    async () => {
      const apps = (await web.api('svc-admin').call('GET', '/svc/applications')).json<{ name: string }[]>();
      return apps.filter((a) => a.name.startsWith(`${prefix}-`)).length >= count;
    },
    { what: `${count} ${prefix}-* applications`, timeoutMs: 120_000, intervalMs: 250 },
  );
}

export function kb(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KB`;
}
