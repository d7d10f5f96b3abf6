// Helpers of the agent tests: the process key of a managed process (read from its environment, as
// only its own user can), raw WSS upgrades with chosen sub-protocols and headers, raw TLS requests.
import { readFile } from 'node:fs/promises';
import { connect } from 'node:tls';
import type { WebSocket } from 'ws';
import { decodeResponse, encodeRequest } from '@svc/protocol';
import { openWebSocket, waitFor, type TestDaemon } from '@svc/testkit';

export { waitFor };

/** pid and SVC_PROCESS_KEY of an app's running process (admin view + /proc/<pid>/environ). */
export async function processOf(daemon: TestDaemon, app: string): Promise<{ pid: number; key: string }> {
  const admin = await daemon.token('admin');
  const pid = await waitFor(
    async () => {
      const view = (await daemon.rest().call('GET', `/svc/app/${app}`, { token: admin })).json<{
        pid?: number;
      }>();
      return view.pid;
    },
    { what: `a process of ${app}`, timeoutMs: 30_000 },
  );
  const environ = (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0');
  const entry = environ.find((e) => e.startsWith('SVC_PROCESS_KEY='));
  if (entry === undefined) throw new Error(`no SVC_PROCESS_KEY in the environment of ${app}`);
  return { pid, key: entry.slice('SVC_PROCESS_KEY='.length) };
}

/** A WSS connection offering `protocols` (testkit `openWebSocket`); rejects with `{status, body}`. */
export const openWs = openWebSocket;

/** One request over an open WSS connection; its response (pushes are collected in `pushes`). */
export function wsCall(
  ws: WebSocket,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; query?: Record<string, string>; body?: unknown } = {},
): Promise<{ status: number; headers: Record<string, string>; text: string }> {
  const uuid = crypto.randomUUID();
  const answer = new Promise<{ status: number; headers: Record<string, string>; text: string }>((resolve) => {
    const onMessage = (data: Buffer): void => {
      const response = decodeResponse(data);
      if (response.uuid !== uuid) return;
      ws.off('message', onMessage);
      resolve({
        status: response.http_status,
        headers: response.headers,
        text: Buffer.from(response.body).toString('utf8'),
      });
    };
    ws.on('message', onMessage);
  });
  const body = options.body === undefined ? new Uint8Array(0) : Buffer.from(JSON.stringify(options.body));
  ws.send(
    encodeRequest({
      uuid,
      request_uri: path,
      http_method: method,
      client_addr: '',
      headers: {
        ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...options.headers,
      },
      query: options.query ?? {},
      body,
    }),
  );
  return answer;
}

/**
 * Sends raw bytes over TLS and resolves with everything the server answered until it closed the
 * connection: for requests no client library sends.
 */
export function rawTls(
  port: number,
  ca: string,
  bytes: string | Buffer,
  options: { endAfterWrite?: boolean } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca }, () => {
      socket.write(bytes);
      if (options.endAfterWrite === true) socket.end();
    });
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.once('close', () => resolve(answer));
    socket.once('error', (error: Error) => (answer === '' ? reject(error) : resolve(answer)));
  });
}
