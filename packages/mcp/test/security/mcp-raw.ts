// MCP over plain HTTPS requests, for the attack tests: many sessions without the SDK client's
// standalone event stream per session (a flood opens sessions and keeps nothing else open).
import { Agent, fetch as undiciFetch } from 'undici';

export const PROTOCOL_VERSION = '2025-06-18';

export interface RawAnswer {
  status: number;
  sessionId: string | undefined;
  /** The JSON-RPC message of the answer (JSON or the first `data:` of an event stream), if any. */
  message: { result?: unknown; error?: { code: number; message: string } } | undefined;
}

export class RawMcp {
  readonly url: string;
  readonly dispatcher: Agent;
  #id = 0;

  constructor(url: string, ca: string) {
    this.url = url;
    // Many sessions at once: enough sockets that the flood is not queued behind itself.
    this.dispatcher = new Agent({ connect: { ca }, connections: 64 });
  }

  async post(token: string, body: unknown, sessionId?: string): Promise<RawAnswer> {
    const response = await undiciFetch(this.url, {
      method: 'POST',
      dispatcher: this.dispatcher,
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(sessionId === undefined
          ? {}
          : { 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL_VERSION }),
      },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    let message: RawAnswer['message'];
    const data = /^data: (.*)$/m.exec(text)?.[1] ?? (text.startsWith('{') ? text : undefined);
    if (data !== undefined) message = JSON.parse(data) as RawAnswer['message'];
    return {
      status: response.status,
      sessionId: response.headers.get('mcp-session-id') ?? undefined,
      message,
    };
  }

  /** `initialize` then `notifications/initialized`: the session id, or the refusal's answer. */
  async open(token: string): Promise<RawAnswer> {
    const answer = await this.post(token, {
      jsonrpc: '2.0',
      id: ++this.#id,
      method: 'initialize',
      params: {
        protocolVersion: PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: 'svc-security-test', version: '1.0.0' },
      },
    });
    if (answer.status === 200 && answer.sessionId !== undefined)
      await this.post(token, { jsonrpc: '2.0', method: 'notifications/initialized' }, answer.sessionId);
    return answer;
  }

  request(token: string, sessionId: string, method: string, params: unknown = {}): Promise<RawAnswer> {
    return this.post(token, { jsonrpc: '2.0', id: ++this.#id, method, params }, sessionId);
  }

  /** Ends the session (HTTP DELETE): its status. */
  async end(token: string, sessionId: string): Promise<number> {
    const response = await undiciFetch(this.url, {
      method: 'DELETE',
      dispatcher: this.dispatcher,
      headers: {
        authorization: `Bearer ${token}`,
        'mcp-session-id': sessionId,
        'mcp-protocol-version': PROTOCOL_VERSION,
      },
    });
    await response.body?.cancel();
    return response.status;
  }

  /** Whether the session is still there (a ping: 200, or 404 once it was closed). */
  async alive(token: string, sessionId: string): Promise<boolean> {
    const answer = await this.request(token, sessionId, 'ping');
    if (answer.status !== 200 && answer.status !== 404) throw new Error(`ping: HTTP ${answer.status}`);
    return answer.status === 200;
  }

  async close(): Promise<void> {
    await this.dispatcher.close();
  }
}

/** An access token for svc's API from the built-in issuer's password grant (client svc-cli). */
export async function passwordToken(
  auth: { token_endpoint: string; scope: string },
  dispatcher: Agent,
  user: { username: string; password: string },
): Promise<string> {
  const answer = await undiciFetch(auth.token_endpoint, {
    method: 'POST',
    dispatcher,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from('svc-cli:').toString('base64')}`,
    },
    body: new URLSearchParams({
      grant_type: 'password',
      username: user.username,
      password: user.password,
      scope: auth.scope,
    }).toString(),
  });
  if (answer.status !== 200) throw new Error(`password grant for ${user.username}: ${answer.status}`);
  return ((await answer.json()) as { access_token: string }).access_token;
}
