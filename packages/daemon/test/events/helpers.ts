// Helpers of the event tests: read pushes off the raw TCP/WSS clients of the testkit (which write
// frames themselves and add nothing), and a TLS TCP client that can stop reading (a stalled peer).
import { randomUUID } from 'node:crypto';
import { connect, type TLSSocket } from 'node:tls';
import { expect } from 'vitest';
import {
  CLIENT_MAX_BODY_BYTES,
  EVENT_REQUEST_URI,
  FrameDecoder,
  decodeResponse,
  encodeFrame,
  encodeRequest,
  type EventMessage,
  type Response,
} from '@svc/protocol';
import type { CallResult, PersistentClient } from '@svc/testkit';
import { EVENT_DATA_SCHEMAS, EVENT_MESSAGE_SCHEMA } from '../../src/events/event-schemas.ts';
import { waitFor } from '../helpers/wait-for.ts';

export { waitFor };

const parsed = new WeakMap<Response, EventMessage>();

/**
 * The event message of a push (parsed once). Every push a test reads is checked against the
 * published schemas (spec/events/*.schema.json): the envelope and its event's data.
 */
export function message(push: Response): EventMessage {
  let m = parsed.get(push);
  if (m === undefined) {
    m = EVENT_MESSAGE_SCHEMA.parse(JSON.parse(Buffer.from(push.body).toString('utf8')));
    if (m.event_type !== '__disconnected__') EVENT_DATA_SCHEMAS[m.event_type].parse(m.data);
    parsed.set(push, m);
  }
  return m;
}

/** Events received so far on a client for one subscription, in arrival order. */
export function eventsOf(client: { pushes: Response[] }, subscriptionId: string): EventMessage[] {
  return client.pushes
    .filter((p) => p.request_uri === EVENT_REQUEST_URI)
    .map(message)
    .filter((m) => m.subscription_id === subscriptionId);
}

/** Wait until the subscription's events satisfy `done`; returns them. */
export async function waitEvents(
  client: { pushes: Response[] },
  subscriptionId: string,
  done: (events: EventMessage[]) => boolean,
  what: string,
  timeoutMs = 10_000,
): Promise<EventMessage[]> {
  return waitFor(
    () => {
      const events = eventsOf(client, subscriptionId);
      return done(events) ? events : undefined;
    },
    { what, timeoutMs },
  );
}

/** Sequences 1..n without a gap, in order. */
export function expectGapless(events: readonly EventMessage[]): void {
  events.forEach((e, i) => {
    if (e.sequence !== i + 1) expect.fail(`event ${i} has sequence ${e.sequence}, expected ${i + 1}`);
  });
}

/** Concatenated STDOUT output, checking that every chunk starts where the previous one ended. */
export function stdoutText(events: readonly EventMessage[]): string {
  let text = '';
  let next: number | undefined;
  for (const e of events) {
    if (e.event_type !== 'STDOUT') continue;
    const data = e.data as { output: string; position: number; finished: boolean };
    if (next !== undefined) expect(data.position, 'STDOUT position continues the previous chunk').toBe(next);
    next = data.position + Buffer.byteLength(data.output);
    text += data.output;
  }
  return text;
}

export async function subscribe(
  client: PersistentClient,
  token: string,
  app: string | undefined,
  events?: string,
): Promise<{ subscription_id: string; app_name: string; events: string[] }> {
  const r = await client.call('POST', app === undefined ? '/svc/subscribe' : `/svc/app/${app}/subscribe`, {
    token,
    query: events === undefined ? {} : { events },
  });
  expect(r.status, r.text()).toBe(200);
  return r.json();
}

export function ok(r: CallResult): CallResult {
  expect(r.status, r.text()).toBe(200);
  return r;
}

/** A TLS TCP client written frame by frame, whose reading can be stopped (a stalled subscriber). */
export interface StallableClient {
  readonly socket: TLSSocket;
  readonly pushes: Response[];
  readonly closed: Promise<void>;
  call(method: string, path: string, token: string, query?: Record<string, string>): Promise<Response>;
  /** Stop reading: the daemon's writes pile up in the kernel and then in its own queue. */
  stall(): void;
  close(): void;
}

export async function stallableClient(port: number, ca: string): Promise<StallableClient> {
  const socket = connect({ host: '127.0.0.1', port, ca });
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', resolve);
    socket.once('error', reject);
  });
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const decoder = new FrameDecoder({ maxBodyBytes: CLIENT_MAX_BODY_BYTES });
  const waiters = new Map<string, (r: Response) => void>();
  const pushes: Response[] = [];
  socket.on('data', (chunk: Buffer) => {
    for (const body of decoder.push(chunk)) {
      const response = decodeResponse(body);
      const waiter = waiters.get(response.uuid);
      if (waiter !== undefined) {
        waiters.delete(response.uuid);
        waiter(response);
      } else pushes.push(response);
    }
  });
  return {
    socket,
    pushes,
    closed,
    call(method, path, token, query = {}) {
      const uuid = randomUUID();
      const answer = new Promise<Response>((resolve) => waiters.set(uuid, resolve));
      socket.write(
        encodeFrame(
          encodeRequest({
            uuid,
            request_uri: path,
            http_method: method,
            client_addr: '',
            headers: { authorization: `Bearer ${token}` },
            query,
            body: new Uint8Array(0),
          }),
        ),
      );
      return answer;
    },
    stall() {
      socket.pause();
    },
    close() {
      socket.destroy();
    },
  };
}
