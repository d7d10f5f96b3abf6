// svc-agent in builtin mode with the real svc-identity: `{agent}/auth/*` is the built-in issuer
// (discovery, JWKS, token endpoint: password and client-credentials grants), so the issuer port never
// needs to be reachable remotely; `svc login --password` against the agent signs in through it, the
// issuer it validates stays the one discovery publishes, and svc commands then work through the agent.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium } from 'playwright-core';
import {
  BUILTIN_MODE_ENV,
  CHROMIUM_EXECUTABLE,
  CHROMIUM_FLAGS,
  restClient,
  startTestDaemon,
  type ApiClient,
  type TestDaemon,
} from '@svc/testkit';
import { svcEnv, type SvcEnv } from '@svc/cli/testing';
import { waitFor } from './helpers.ts';

const REPO = resolve(import.meta.dirname, '../../..');
const SCOPE = 'openid audience:server:client_id:svc-api';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

let daemon: TestDaemon;
let agentUrl: string;
let metricsPort: number;
let via: ApiClient;
let issuer: string;
let svc: SvcEnv | undefined;

async function secret(file: string, key?: string): Promise<string> {
  const text = await readFile(join(daemon.workDir, 'auth', 'secrets', file), 'utf8');
  if (key === undefined) return text.trim();
  const line = text.split('\n').find((l) => l.startsWith(`${key}=`));
  return (line as string).slice(key.length + 1);
}

async function agentSeries(name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(name))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

beforeAll(async () => {
  daemon = await startTestDaemon({
    agent: true,
    env: {
      ...BUILTIN_MODE_ENV,
      SVC_METRICS_PORT: '0',
    },
    files: { 'apps/identity.yaml': await readFile(join(REPO, 'apps', 'identity.yaml'), 'utf8') },
  });
  const agent = await daemon.agent();
  agentUrl = agent.agentUrl;
  metricsPort = agent.metricsPort!;
  via = restClient(agentUrl, daemon.ca);
  issuer = await waitFor(
    async () => {
      const doc = (await daemon.rest().call('GET', '/svc/auth/config')).json<{ issuer: string }>();
      return /:0\/auth$/.test(doc.issuer) ? undefined : doc.issuer;
    },
    { what: 'the issuer port in /svc/auth/config', timeoutMs: 30_000, intervalMs: 50 },
  );
  await waitFor(
    async () => (await via.call('GET', '/auth/.well-known/openid-configuration')).status === 200,
    { what: 'discovery through the agent', timeoutMs: 30_000, intervalMs: 50 },
  );
});
afterAll(async () => {
  await svc?.cleanup();
  await daemon?.close();
});

describe('/auth through the agent (builtin mode)', () => {
  it('serves the issuer discovery and JWKS unchanged: the issuer stays the published one', async () => {
    const routed = await via.call('GET', '/auth/.well-known/openid-configuration');
    const direct = await fetch(`${issuer}/.well-known/openid-configuration`);
    expect(routed.status).toBe(200);
    expect(routed.json()).toEqual(await direct.json());
    expect(routed.json<{ issuer: string }>().issuer).toBe(issuer);
    const jwks = await via.call('GET', '/auth/jwks');
    expect(jwks.status).toBe(200);
    expect(jwks.json()).toEqual(await (await fetch(`${issuer}/jwks`)).json());
    expect(jwks.json<{ keys: unknown[] }>().keys.length).toBeGreaterThan(0);
  });

  it('issues tokens at {agent}/auth/token: password grant and client credentials, valid at svcd', async () => {
    // The spec's form: HTTP Basic with the client id and an empty secret.
    const password = await via.call('POST', '/auth/token', {
      headers: { ...FORM, authorization: `Basic ${Buffer.from('svc-cli:').toString('base64')}` },
      rawBody: new URLSearchParams({
        grant_type: 'password',
        username: 'admin@svc.local',
        password: await secret('initial-admin-credentials', 'password'),
        scope: SCOPE,
      }).toString(),
    });
    expect(password.status, password.text()).toBe(200);
    const adminToken = password.json<{ access_token: string }>().access_token;
    const self = await via.call('GET', '/svc/self', { token: adminToken });
    expect(self.json()).toMatchObject({ principal_id: 'admin' });

    const basic = Buffer.from(`svc-automation:${await secret('automation-client')}`).toString('base64');
    const machine = await via.call('POST', '/auth/token', {
      headers: { ...FORM, authorization: `Basic ${basic}` },
      rawBody: new URLSearchParams({
        grant_type: 'client_credentials',
        scope: 'audience:server:client_id:svc-api',
      }).toString(),
    });
    expect(machine.status, machine.text()).toBe(200);
    const machineSelf = await via.call('GET', '/svc/self', {
      token: machine.json<{ access_token: string }>().access_token,
    });
    expect(machineSelf.json()).toMatchObject({ principal_id: 'client:svc-automation' });

    const wrong = await via.call('POST', '/auth/token', {
      headers: FORM,
      rawBody: new URLSearchParams({
        grant_type: 'password',
        client_id: 'svc-cli',
        username: 'admin@svc.local',
        password: 'not-the-password',
        scope: SCOPE,
      }).toString(),
    });
    expect(wrong.status).toBeGreaterThanOrEqual(400);
    expect(wrong.status).toBeLessThan(500);
  });

  it('svc login --password against the agent signs in through {agent}/auth; svc commands work through it', async () => {
    svc = await svcEnv({ SVC_HOME: daemon.home });
    const before = await agentSeries('svc_agent_requests_total{upstream="issuer"');
    const login = await svc.run(
      ['-H', agentUrl, 'login', '--password-stdin', '--username', 'admin@svc.local'],
      {
        stdin: `${await secret('initial-admin-credentials', 'password')}\n`,
      },
    );
    expect(login.code, login.stderr).toBe(0);
    // Discovery and the token request went through the agent's /auth route.
    expect(await agentSeries('svc_agent_requests_total{upstream="issuer"')).toBeGreaterThanOrEqual(
      before + 2,
    );
    const session = JSON.parse(await readFile(join(svc.configDir, 'session.json'), 'utf8')) as {
      server: string;
      issuer: string;
    };
    expect(session.server).toBe(agentUrl);
    expect(session.issuer).toBe(issuer);
    const info = await svc.run(['loginfo']);
    expect(info.stdout).toMatch(/^Principal:\s+admin$/m);
    const registered = await svc.run(['add', 'via-agent', '--cmd', 'sleep 600']);
    expect(registered.code, registered.stderr).toBe(0);
    const listed = await svc.run(['ls', '-o', 'json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { name: string }[]).map((a) => a.name)).toContain('via-agent');
  });

  it('svc login --device against the agent sends the user to {agent}/auth/device, which the agent serves', async () => {
    const user = await svcEnv({ SVC_HOME: daemon.home });
    try {
      const live = user.spawn(['-H', agentUrl, 'login', '--device']);
      const match = await live.waitFor(/open (https:\/\/\S+\/auth\/device)\s/, 'stderr', 30_000);
      const page = match[1]!;
      expect(page).toBe(`${agentUrl}/auth/device`);
      const served = await via.call('GET', new URL(page).pathname);
      expect(served.status).toBe(200);
      expect(served.contentType).toContain('text/html');
      // SIGTERM ends the device-code polling at once: exit 130 (interrupted), no session written.
      live.child.kill('SIGTERM');
      expect(await live.exited).toBe(130);
    } finally {
      await user.cleanup();
    }
  });
  it('browser sign-in (PKCE) through the agent in a real Chromium: every issuer page comes through {agent}/auth', async () => {
    const user = await svcEnv({ SVC_HOME: daemon.home });
    const profile = await mkdtemp(join(tmpdir(), 'svc-agent-chromium-'));
    const browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM_EXECUTABLE,
      headless: true,
      args: [...CHROMIUM_FLAGS],
      ignoreHTTPSErrors: true, // the agent's certificate is from the daemon's own CA (not the point here)
    });
    try {
      const login = user.spawn(['-H', agentUrl, 'login', '--no-browser'], { env: { DISPLAY: ':99' } });
      const url = (await login.waitFor(/browser to sign in:\n\s+(\S+)\n/, 'stderr'))[1]!;
      expect(url.startsWith(`${agentUrl}/auth/`), url).toBe(true);
      const redirect = new URL(url).searchParams.get('redirect_uri')!;
      const issuerOrigin = new URL(issuer).origin;
      const visited: string[] = [];
      const page = await browser.newPage();
      page.on('request', (request) => visited.push(request.url()));
      await page.goto(url);
      await page.fill('input[name="username"]', 'admin@svc.local');
      await page.fill('input[name="password"]', await secret('initial-admin-credentials', 'password'));
      await Promise.all([
        page.waitForURL((u) => !u.pathname.endsWith('/login')),
        page.click('[type="submit"]'),
      ]);
      // The consent page (first sign-in of this client), then the loopback callback of the CLI.
      if (!page.url().startsWith(redirect)) await page.click('[type="submit"]');
      await page.waitForURL((u) => u.href.startsWith(redirect));
      expect(await page.textContent('body')).toContain('Signed in');
      expect(await login.exited).toBe(0);

      // The browser never needed the loopback issuer: everything before the callback was the agent's.
      const beforeCallback = visited.filter((u) => !u.startsWith(redirect));
      expect(beforeCallback.length).toBeGreaterThan(0);
      for (const u of beforeCallback) expect(u.startsWith(`${agentUrl}/auth/`), u).toBe(true);
      expect(visited.some((u) => u.startsWith(issuerOrigin))).toBe(false);
      const stored = JSON.parse(await readFile(join(user.configDir, 'session.json'), 'utf8')) as {
        grant: string;
        issuer: string;
        server: string;
      };
      expect(stored).toMatchObject({ grant: 'authorization_code', issuer, server: agentUrl });
    } finally {
      await browser.close();
      await rm(profile, { recursive: true, force: true });
      await user.cleanup();
    }
  });
});
