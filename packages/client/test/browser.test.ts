// @svc/client in a real headless Chromium (Debian /usr/bin/chromium driven by playwright-core, which
// never downloads a browser) against a real svcd: the browser entry is bundled here with esbuild for
// the browser (no Node built-ins, no Buffer polyfill), served with a tiny page over loopback HTTP,
// and the page talks WSS to the daemon with the bearer offered as sub-protocol `svc-bearer.<token>`.
// Chromium trusts exactly the daemon's server key (--ignore-certificate-errors-spki-list), nothing
// else. REST from the page is blocked by the browser (the daemon serves no CORS headers): asserted.
import { createHash, X509Certificate } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { utf8ByteLength } from '@svc/protocol';
import type * as BrowserEntry from '../src/browser.ts';
import {
  CHROMIUM_EXECUTABLE,
  CHROMIUM_FLAGS,
  startTestDaemon,
  TEST_PRINCIPALS,
  type TestDaemon,
} from '@svc/testkit';

const REPO_ROOT = resolve(import.meta.dirname, '../../..');

let daemon: TestDaemon;
let admin: string;
let bundle: string;
let bundleImports: string[];
let bundleInputs: string[];
let site: Server | undefined;
let siteUrl: string;
let profileDir: string | undefined;
let browser: BrowserContext | undefined;
let page: Page;

/** base64(sha256(SubjectPublicKeyInfo)) of the certificate the daemon presents: Chromium's format. */
async function daemonSpkiHash(): Promise<string> {
  const url = new URL(daemon.restUrl);
  const raw = await new Promise<Buffer>((done, fail) => {
    const socket = tlsConnect({ host: url.hostname, port: Number(url.port), ca: daemon.ca }, () => {
      const der = socket.getPeerCertificate().raw;
      socket.end();
      done(der);
    });
    socket.once('error', fail);
  });
  const spki = new X509Certificate(raw).publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(spki).digest('base64');
}

beforeAll(async () => {
  daemon = await startTestDaemon({ env: {} });
  admin = await daemon.token('admin');

  const esbuild = await import('esbuild');
  const built = await esbuild.build({
    absWorkingDir: REPO_ROOT,
    entryPoints: ['packages/client/src/browser.ts'],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  bundle = built.outputFiles[0]!.text;
  bundleInputs = Object.keys(built.metafile.inputs);
  bundleImports = Object.values(built.metafile.outputs).flatMap((o) => o.imports.map((i) => i.path));

  site = createServer((request, response) => {
    if (request.url === '/client.js') {
      response.writeHead(200, { 'content-type': 'text/javascript' });
      response.end(bundle);
    } else if (request.url === '/') {
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end(
        '<!doctype html><title>svc client</title>' +
          "<script type=module>import * as svc from '/client.js'; window.svc = svc; window.svcReady = true;</script>",
      );
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((done) => site!.listen(0, '127.0.0.1', done));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;

  profileDir = await mkdtemp(join(tmpdir(), 'svc-client-chromium-'));
  browser = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM_EXECUTABLE,
    headless: true,
    args: [...CHROMIUM_FLAGS, `--ignore-certificate-errors-spki-list=${await daemonSpkiHash()}`],
  });
  page = await browser.newPage();
  await page.goto(siteUrl);
  await page.waitForFunction(() => (globalThis as unknown as { svcReady?: boolean }).svcReady === true);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((done) => (site === undefined ? done() : site.close(() => done())));
  if (profileDir !== undefined) await rm(profileDir, { recursive: true, force: true });
  await daemon?.close();
});

// The page's view of the bundle's exports (typed loosely: it runs in the browser).
type PageSvc = typeof BrowserEntry;

describe('the browser bundle', () => {
  it('has no Node built-ins and no Buffer polyfill', () => {
    expect(bundleImports).toEqual([]); // nothing left external, so nothing for a browser to resolve
    expect(bundleInputs.filter((input) => /^node:|(^|\/)(buffer|process)\//.test(input))).toEqual([]);
    expect(bundle).not.toMatch(/from ["']node:|require\(["']/);
    expect(bundleInputs).toContain('packages/protocol/src/codec.ts');
  });

  it('the codec needs no Buffer in the page, and its UTF-8 lengths match Node and TextEncoder', async () => {
    const samples = [
      '',
      'a',
      'é',
      '€',
      '😀',
      '\ud800',
      'x\udc00',
      'a\ud83d',
      '\ud83d\ude00\ud83d',
      'z'.repeat(70_000),
    ];
    for (const s of samples) expect(utf8ByteLength(s)).toBe(Buffer.byteLength(s, 'utf8'));
    const result = await page.evaluate((samples) => {
      return {
        buffer: typeof (globalThis as { Buffer?: unknown }).Buffer,
        process: typeof (globalThis as { process?: unknown }).process,
        lengths: samples.map((s) => new TextEncoder().encode(s).length),
      };
    }, samples);
    expect(result.buffer).toBe('undefined');
    expect(result.process).toBe('undefined');
    expect(result.lengths).toEqual(samples.map((s) => utf8ByteLength(s)));
  });
});

describe('WSS from Chromium with the bearer as sub-protocol', () => {
  it('self(), register with subscribeEvents and receive START/STDOUT/EXIT, delete', async () => {
    const name = `browser-app-${Date.now()}`;
    const result = await page.evaluate(
      async ({ url, token, name }) => {
        const svc = (globalThis as unknown as { svc: PageSvc }).svc;
        const client = await svc.connect({ url, transport: 'wss', token });
        try {
          const self = await client.getSelf();
          // Served by the bearer pinned at upgrade: a bearer-less WSS session could not call this.
          client.clearToken();
          const selfAfterClear = await client.getSelf();
          client.setToken(token);
          const events: { type: string; output?: unknown; exitCode?: unknown }[] = [];
          let exited!: () => void;
          const exit = new Promise<void>((done) => (exited = done));
          const app = await client.registerApplication(
            name,
            { command: 'echo hello-from-chromium', shell: true },
            {
              subscribeEvents: ['ALL'],
              onEvent: (event) => {
                const data = event.data as { output?: unknown; exit_code?: unknown };
                events.push({ type: event.event_type, output: data.output, exitCode: data.exit_code });
                if (event.event_type === 'EXIT') exited();
              },
            },
          );
          await exit;
          await client.deleteApplication(name);
          return {
            self,
            selfAfterClear,
            subscribed: typeof app.subscription_id === 'string',
            events,
          };
        } finally {
          await client.close();
        }
      },
      { url: daemon.restUrl, token: admin, name },
    );
    expect(JSON.stringify(result.self)).toContain(TEST_PRINCIPALS.admin.sub);
    expect(result.selfAfterClear).toEqual(result.self);
    expect(result.subscribed).toBe(true);
    const types = result.events.map((e) => e.type);
    expect(types.indexOf('START')).toBeGreaterThanOrEqual(0);
    expect(types.indexOf('START')).toBeLessThan(types.indexOf('EXIT'));
    const stdout = result.events
      .filter((e) => e.type === 'STDOUT')
      .map((e) => e.output)
      .join('');
    expect(stdout).toBe('hello-from-chromium\n');
    expect(result.events.find((e) => e.type === 'EXIT')?.exitCode).toBe(0);
  }, 60_000);

  it('a bad token is refused at upgrade: connect() rejects with TransportDisconnectedError', async () => {
    const result = await page.evaluate(async (url) => {
      const svc = (globalThis as unknown as { svc: PageSvc }).svc;
      try {
        await svc.connect({ url, transport: 'wss', token: 'not.a.valid-token' });
        return 'connected';
      } catch (error) {
        return error instanceof svc.TransportDisconnectedError ? 'disconnected' : String(error);
      }
    }, daemon.restUrl);
    expect(result).toBe('disconnected');
  });

  it('REST (fetch) from the page is blocked: the daemon serves no CORS headers', async () => {
    const result = await page.evaluate(
      async ({ url, token }) => {
        const svc = (globalThis as unknown as { svc: PageSvc }).svc;
        const client = await svc.connect({ url, transport: 'rest', token });
        try {
          await client.getSelf();
          return 'served';
        } catch (error) {
          return error instanceof svc.TransportDisconnectedError ? 'blocked' : String(error);
        }
      },
      { url: daemon.restUrl, token: admin },
    );
    expect(result).toBe('blocked');
  });
});
