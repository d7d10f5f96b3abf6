// svc's MCP server at the agent's /mcp, driven by the official SDK's own MCP client against a real
// builtin-mode svcd and agent: the MCP authorization flow end to end (401 naming the protected
// resource metadata, discovery of svc's issuer, authorization code + PKCE with the pre-registered
// public client svc-mcp-user and a scripted browser step, audience svc-api), every tool as an
// administrator, the viewer's denials, a subscription to an application's output resource, and
// refusal of a token that is not for svc's API.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Agent, fetch as undiciFetch } from 'undici';
import { startServedDaemon, type ServeInfo, type TestDaemon } from '@svc/testkit';
import { FormBrowser, signInAndConsent } from '@svc/identity/testing';
import { TOOLS } from '../src/tools.ts';

let daemon: TestDaemon;
let info: ServeInfo;
let mcpUrl: URL;
let dispatcher: Agent;
const clients: Client[] = [];

/** fetch that trusts the test daemon's CA (the agent's certificate). */
const caFetch = ((url: string | URL, init?: RequestInit) =>
  undiciFetch(url, { ...(init as object), dispatcher })) as unknown as typeof fetch;

/** An MCP client's OAuth state, in memory: the public client svc-mcp-user, a loopback redirect. */
class ScriptedProvider implements OAuthClientProvider {
  authorizationUrl: URL | undefined;
  #tokens: OAuthTokens | undefined;
  #verifier = '';
  redirectUrl = 'http://127.0.0.1:53682/callback';
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'svc MCP test',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation(): { client_id: string } {
    return { client_id: 'svc-mcp-user' };
  }
  tokens(): OAuthTokens | undefined {
    return this.#tokens;
  }
  saveTokens(tokens: OAuthTokens): void {
    this.#tokens = tokens;
  }
  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string): void {
    this.#verifier = verifier;
  }
  codeVerifier(): string {
    return this.#verifier;
  }
}

/** A provider holding a ready bearer (the viewer's, from the password grant). */
function staticProvider(token: string): OAuthClientProvider {
  const provider = new ScriptedProvider();
  provider.saveTokens({ access_token: token, token_type: 'Bearer' });
  return provider;
}

async function connect(provider: OAuthClientProvider): Promise<Client> {
  const client = new Client({ name: 'svc-mcp-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: caFetch }));
  clients.push(client);
  return client;
}

/** The whole MCP authorization flow for a user: 401, discovery, PKCE, the sign-in pages, the code exchange. */
async function signIn(user: {
  username: string;
  password: string;
}): Promise<{ client: Client; provider: ScriptedProvider }> {
  const provider = new ScriptedProvider();
  const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: caFetch });
  const first = new Client({ name: 'svc-mcp-test', version: '1.0.0' });
  await expect(first.connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
  const url = provider.authorizationUrl!;
  expect(url.searchParams.get('client_id')).toBe('svc-mcp-user');
  expect(url.searchParams.get('code_challenge_method')).toBe('S256');
  expect(url.searchParams.get('resource')).toBe(mcpUrl.href);
  const browser = new FormBrowser();
  const page = await browser.follow(url.href);
  expect(page.status).toBe(200);
  const done = await signInAndConsent(browser, page, user, provider.redirectUrl);
  const code = new URL(done.url).searchParams.get('code');
  expect(code, done.url).toBeTruthy();
  await transport.finishAuth(code!);
  return { client: await connect(provider), provider };
}

function textOf(result: Awaited<ReturnType<Client['callTool']>>): string {
  return (result.content as { type: string; text: string }[]).map((c) => c.text).join('');
}

function payload(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Record<
    string,
    unknown
  >;
}

beforeAll(async () => {
  ({ daemon, info } = await startServedDaemon({ agent: true, builtin: true, tokenTtlSeconds: 900 }));
  dispatcher = new Agent({ connect: { ca: readFileSync(info.ca, 'utf8') } });
  mcpUrl = new URL(`${info.agent!}/mcp`);
}, 120_000);

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  await daemon?.close();
  await dispatcher?.close();
});

describe('MCP at the agent /mcp', () => {
  it("answers 401 naming its protected resource metadata, which names svc's issuer and the /mcp resource", async () => {
    const refused = await caFetch(mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }),
    });
    expect(refused.status).toBe(401);
    const challenge = refused.headers.get('www-authenticate') ?? '';
    expect(challenge).toBe(
      `Bearer resource_metadata="${info.agent!}/.well-known/oauth-protected-resource/mcp"`,
    );
    const metadata = (await (
      await caFetch(`${info.agent!}/.well-known/oauth-protected-resource/mcp`)
    ).json()) as {
      resource: string;
      authorization_servers: string[];
      scopes_supported: string[];
    };
    expect(metadata.resource).toBe(mcpUrl.href);
    expect(metadata.authorization_servers).toEqual([info.issuer]);
    expect(metadata.scopes_supported).toContain('audience:server:client_id:svc-api');
  });

  it("refuses a token that is not for svc's API (no svc-api audience) with invalid_token", async () => {
    const grant = await caFetch(info.auth!.token_endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('svc-cli:').toString('base64')}`,
      },
      body: new URLSearchParams({
        grant_type: 'password',
        username: info.auth!.users['svc-admin'].username,
        password: info.auth!.users['svc-admin'].password,
        scope: 'openid',
      }).toString(),
    });
    expect(grant.status).toBe(200);
    const other = ((await grant.json()) as { access_token: string }).access_token;
    const refused = await caFetch(mcpUrl, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${other}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }),
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain('error="invalid_token"');
    await expect(connect(staticProvider(other))).rejects.toThrow();
  });

  it('signs an administrator in as svc-mcp-user (PKCE, audience svc-api) and runs every tool', async () => {
    const { client, provider } = await signIn(info.auth!.users['svc-admin']);
    const claims = payload(provider.tokens()!.access_token);
    expect(claims['aud']).toBe('svc-api');
    expect(claims['client_id']).toBe('svc-mcp-user');
    const listed = await client.listTools();
    expect(listed.tools.map((t) => t.name).sort()).toEqual(TOOLS.map((t) => t.name).sort());
    for (const tool of listed.tools) expect(tool.inputSchema.type).toBe('object');

    const call = async (name: string, args: Record<string, unknown> = {}): Promise<string> => {
      const result = await client.callTool({ name, arguments: args });
      expect(result.isError, `${name}: ${textOf(result)}`).toBeFalsy();
      return textOf(result);
    };
    expect(await call('whoami')).toContain('"principal_id": "admin"');
    const ticker = { command: `sh -c 'i=0; while true; do i=$((i+1)); echo "tick $i"; sleep 0.2; done'` };
    expect(await call('register_application', { name: 'mcp-ticker', definition: ticker })).toContain(
      'mcp-ticker',
    );
    expect(await call('list_applications')).toContain('mcp-ticker');
    expect(await call('get_application', { name: 'mcp-ticker' })).toContain('"name": "mcp-ticker"');
    const output = await call('read_output', { name: 'mcp-ticker', stdout_position: '0', timeout: '5' });
    expect(output).toMatch(/tick 1/);
    expect(output).toMatch(/continue with stdout_position=\d+/);
    expect(await call('disable_application', { name: 'mcp-ticker' })).toBeTruthy();
    expect(await call('enable_application', { name: 'mcp-ticker' })).toBeTruthy();
    expect(await call('restart_application', { name: 'mcp-ticker' })).toBeTruthy();
    const ran = await call('run_command', {
      definition: { command: 'sh -c "echo hello-from-mcp; exit 7"' },
      timeout: '20',
    });
    expect(ran).toContain('exit code: 7');
    expect(ran).toContain('hello-from-mcp');
    // A worker app (svc's task loop, in shell): it answers each task with its payload reversed.
    const worker = {
      command: `sh -c 'while true; do t=$(curl -sfk -H "X-Svc-Process-Key: $SVC_PROCESS_KEY" "$SVC_DAEMON_URL/svc/app/$SVC_APPLICATION_NAME/task?timeout=30") && printf "%s" "$t" | rev | curl -sfk -X PUT -H "X-Svc-Process-Key: $SVC_PROCESS_KEY" --data-binary @- "$SVC_DAEMON_URL/svc/app/$SVC_APPLICATION_NAME/task"; done'`,
    };
    await call('register_application', { name: 'mcp-worker', definition: worker });
    expect(await call('send_task', { name: 'mcp-worker', payload: 'ping-42', timeout: '30' })).toContain(
      '24-gnip',
    );
    await call('set_label', { key: 'mcp-zone', value: 'blue' });
    expect(await call('list_labels')).toContain('"mcp-zone": "blue"');
    await call('delete_label', { key: 'mcp-zone' });
    expect(await call('list_labels')).not.toContain('mcp-zone');
    expect(await call('get_resources')).toMatch(/mem/i);
    await call('delete_application', { name: 'mcp-worker' });
    expect(await call('list_applications')).not.toContain('mcp-worker');
    // Bad input is the tool's error, with svcd's message; the session goes on.
    const bad = await client.callTool({ name: 'get_application', arguments: { name: 'no-such-app' } });
    expect(bad.isError).toBe(true);
    expect(textOf(bad)).toMatch(/HTTP 404/);
  }, 120_000);

  it("lets a subscriber follow an application's output resource", async () => {
    const { client } = await signIn(info.auth!.users['svc-admin']);
    const templates = await client.listResourceTemplates();
    expect(templates.resourceTemplates.map((t) => t.uriTemplate)).toContain('svc://app/{name}/output');
    const resources = await client.listResources();
    expect(resources.resources.map((r) => r.uri)).toContain('svc://app/mcp-ticker/output');
    const updated = new Promise<string>((resolve) =>
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (note) => resolve(note.params.uri)),
    );
    await client.subscribeResource({ uri: 'svc://app/mcp-ticker/output' });
    expect(await updated).toBe('svc://app/mcp-ticker/output');
    const read = await client.readResource({ uri: 'svc://app/mcp-ticker/output' });
    expect((read.contents[0] as { text: string }).text).toMatch(/tick \d+/);
    await client.unsubscribeResource({ uri: 'svc://app/mcp-ticker/output' });
  }, 60_000);

  it('accepts the /oauth/callback loopback redirect of common MCP bridges (mcp-remote) on any port', async () => {
    const provider = new ScriptedProvider();
    provider.redirectUrl = 'http://localhost:3334/oauth/callback';
    const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: caFetch });
    const client = new Client({ name: 'svc-mcp-test', version: '1.0.0' });
    await expect(client.connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
    const page = await new FormBrowser().follow(provider.authorizationUrl!.href);
    expect(page.status).toBe(200);
    expect(page.html).toContain('Sign in to svc');
  });

  it("gives a viewer's agent exactly the viewer's rights: it reads, it cannot register or run", async () => {
    const { client } = await signIn(info.auth!.users['svc-viewer']);
    const listed = await client.callTool({ name: 'list_applications', arguments: {} });
    expect(listed.isError).toBeFalsy();
    for (const [name, args] of [
      ['register_application', { name: 'viewer-app', definition: { command: 'sleep 60' } }],
      ['run_command', { definition: { command: 'id' } }],
      ['delete_application', { name: 'mcp-ticker' }],
      ['set_label', { key: 'x', value: 'y' }],
    ] as const) {
      const result = await client.callTool({ name, arguments: args });
      expect(result.isError, name).toBe(true);
      expect(textOf(result), name).toMatch(/HTTP 403/);
    }
  }, 60_000);

  it('gives the machine identity (svc-maintenance) its rights: control yes, registration no', async () => {
    const client = await connect(staticProvider(info.tokens['svc-maintenance']));
    const restarted = await client.callTool({
      name: 'restart_application',
      arguments: { name: 'mcp-ticker' },
    });
    expect(restarted.isError, textOf(restarted)).toBeFalsy();
    const registered = await client.callTool({
      name: 'register_application',
      arguments: { name: 'machine-app', definition: { command: 'sleep 60' } },
    });
    expect(registered.isError).toBe(true);
    expect(textOf(registered)).toMatch(/HTTP 403/);
  }, 60_000);

  it('answers malformed, oversized and hostile requests with a clear error and keeps serving', async () => {
    const token = info.tokens['svc-admin'];
    const post = (body: string, headers: Record<string, string> = {}): Promise<Response> =>
      caFetch(mcpUrl, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
        body,
      });
    expect((await post('{not json')).status).toBe(400);
    expect((await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }))).status).toBe(400);
    const listInSession = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect((await post(listInSession, { 'mcp-session-id': 'no-such-session' })).status).toBe(404);
    const huge = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { x: 'a'.repeat(2_000_000) },
    });
    expect([413, 400]).toContain((await post(huge)).status);
    expect(
      (await caFetch(mcpUrl, { method: 'PUT', headers: { authorization: `Bearer ${token}` } })).status,
    ).toBe(405);
    expect((await post('{}', { authorization: 'Basic abc' })).status).toBe(401);
    expect((await post('{}', { authorization: `Bearer ${'x'.repeat(20_000)}` })).status).toBe(401);
    // A hostile tool argument reaches svcd encoded and comes back as the tool's error.
    const client = await connect(staticProvider(token));
    for (const name of ['../../svc/config', 'a/b', '%2e%2e', 'x'.repeat(500)]) {
      const result = await client.callTool({ name: 'get_application', arguments: { name } });
      expect(result.isError, name).toBe(true);
      expect(textOf(result)).toMatch(/HTTP 4\d\d/);
    }
    const unknown = await client.callTool({ name: 'no_such_tool', arguments: {} }).then(
      (result) => textOf(result),
      (error: Error) => error.message,
    );
    expect(unknown).toMatch(/unknown tool/);
    expect(textOf(await client.callTool({ name: 'whoami', arguments: {} }))).toContain('admin');
  }, 60_000);

  it("does not let one principal use another's session", async () => {
    const admin = await signIn(info.auth!.users['svc-admin']);
    const sessionId = (admin.client.transport as StreamableHTTPClientTransport).sessionId!;
    const response = await caFetch(mcpUrl, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${info.tokens['svc-viewer']}`,
        'mcp-session-id': sessionId,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} }),
    });
    expect(response.status).toBe(404);
  });
});
