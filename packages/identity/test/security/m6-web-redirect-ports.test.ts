// Issue 25 M6: svc-web's redirect URIs named port 6060 whatever port the agent had, so the web UI
// answered `invalid_redirect_uri` on SVC_AGENT_PORT=7060 (documented) and through an SSH tunnel to
// another local port; and svc-web accepted http://127.0.0.1:6064/callback, a plain-HTTP port any
// local user can take once the administration UI is off it (C2).
// Must be: the web UI signs in on the agent's real port and through loopback tunnels (RFC 8252
// §7.3: the port of a loopback redirect URI is not compared), and svc-web no longer accepts
// http://127.0.0.1:6064/callback.
//
// A real svcd in builtin mode with its identity provider and agent on a fixed non-default port
// (SVC_AGENT_PORT, as an operator sets it) and svc-web's DEFAULT redirect URIs (the install root's
// config/oidc.yaml; the harness writes none), Debian Chromium, and a TCP forward written here (what
// `ssh -L <port>:127.0.0.1:<agent port>` does) on another port, on 127.0.0.1 and on ::1.
import { createHash, randomBytes } from 'node:crypto';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { restClient } from '@svc/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGN_OUT, startWebHarness, type WebHarness } from '@svc/web/testing';

let web: WebHarness;
const forwards: { server: Server; sockets: Set<Socket> }[] = [];

beforeAll(async () => {
  web = await startWebHarness();
}, 120_000);
afterAll(async () => {
  for (const { server, sockets } of forwards) {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
  await web?.close();
});

/** A byte-for-byte TCP forward from `host`:<ephemeral port> to the agent (TLS passes through). */
async function forward(host: string): Promise<number> {
  const agentPort = Number(new URL(web.url).port);
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect({ host: '127.0.0.1', port: agentPort });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  forwards.push({ server, sockets });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  return (server.address() as { port: number }).port;
}

/** What the issuer does with an authorization request of svc-web naming `redirectUri`. */
async function authorize(redirectUri: string): Promise<{ status: number; location: string; body: string }> {
  const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
  const answer = await restClient(web.url, web.daemon.ca).call('GET', '/auth/auth', {
    query: {
      client_id: 'svc-web',
      response_type: 'code',
      redirect_uri: redirectUri,
      scope: 'openid',
      state: 'state-1',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    },
  });
  return { status: answer.status, location: answer.headers['location'] ?? '', body: answer.text() };
}

describe('M6: svc-web signs in on the ports the web UI is really reached at', () => {
  it("signs in on the agent's real, non-default port with the default redirect URIs", async () => {
    const port = Number(new URL(web.url).port);
    expect(port).not.toBe(6060);
    const page = await web.newPage();
    await web.signIn(page, 'svc-admin');
    await page.getByRole('heading', { name: 'Applications' }).waitFor();
    expect(new URL(page.url()).port).toBe(String(port));
    expect(web.pageErrors(page)).toEqual([]);
  });

  it('signs in through a loopback forward on another port, on 127.0.0.1 and on [::1]', async () => {
    for (const [host, urlHost] of [
      ['127.0.0.1', '127.0.0.1'],
      ['::1', '[::1]'],
    ] as const) {
      const port = await forward(host);
      const at = `https://${urlHost}:${port}`;
      const page = await web.newPage();
      await web.signIn(page, 'svc-viewer', at);
      await page.getByRole('heading', { name: 'Applications' }).waitFor();
      expect(new URL(page.url()).origin).toBe(at);
      expect(await page.getByRole('button', { name: SIGN_OUT }).count()).toBe(1);
      expect(web.pageErrors(page)).toEqual([]);
    }
  });

  it('the issuer accepts loopback redirects on any port and refuses the rest, 6064/callback included', async () => {
    for (const uri of ['https://127.0.0.1:7060/', 'https://localhost:40123/', 'https://[::1]:7060/']) {
      const answer = await authorize(uri);
      expect(answer.status, uri).toBe(303);
      expect(answer.location, uri).toMatch(/\/auth\/interaction\//);
    }
    for (const uri of [
      'http://127.0.0.1:6064/callback',
      'http://127.0.0.1:7060/',
      'https://127.0.0.1:7060/callback',
      'https://127.0.0.1:7060@evil.example/',
      'https://evil.example:7060/',
      'https://127.0.0.1.evil.example:7060/',
    ]) {
      const answer = await authorize(uri);
      expect(answer.status, uri).toBe(400);
      expect(answer.body, uri).toContain('invalid_redirect_uri');
      expect(answer.location, uri).toBe('');
    }
  });
});
