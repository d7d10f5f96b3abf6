// `svc logs -f` through STDOUT events over WSS (@svc/client), resuming by byte position: the
// output already written is read with GET …/output from the current position (backfill), events
// are deduplicated by `position`, and after a disconnect svc reconnects, backfills from where it
// stopped and subscribes again. A new process of the app (START, or STDOUT of another
// process_uuid) is followed from its byte 0. REMOVED ends the command.
import { connectWss, SvcClient, type SubscriptionEvent } from '@svc/client';
import { accessToken, type Credentials } from './auth.ts';
import { CliError, EXIT } from './errors.ts';
import type { Api } from './api.ts';
import type { Ui } from './ui.ts';

export interface FollowOptions {
  api: Api;
  ui: Ui;
  creds: Credentials;
  target: string | undefined;
  name: string;
  signal: AbortSignal;
  write: (data: Buffer) => void;
}

/** Thrown when events cannot be used at all (no WSS, refused subscription): fall back to polling. */
export class EventsUnavailable extends Error {}

const RECONNECT_MAX_MS = 10_000;

interface Cursor {
  processUuid: string | undefined;
  position: number;
}

async function backfill(o: FollowOptions, cursor: Cursor): Promise<boolean> {
  // Reads everything of the cursor's process from its position (no wait). False: app removed.
  for (;;) {
    const reply = await o.api.call('GET', `/svc/app/${encodeURIComponent(o.name)}/output`, {
      query: { stdout_position: cursor.position, process_uuid: cursor.processUuid },
      accept: [404],
      signal: o.signal,
    });
    if (reply.status === 404) {
      if (reply.text().includes('app_not_found')) return false;
      // That process's output is gone (rotated away): continue with the current one.
      cursor.processUuid = undefined;
      cursor.position = 0;
      continue;
    }
    if (reply.body.length > 0) o.write(reply.body);
    cursor.position = Number(reply.header('x-output-position') ?? cursor.position);
    cursor.processUuid ??= reply.header('x-process-uuid');
    if (reply.body.length === 0) return true;
  }
}

export async function followEvents(o: FollowOptions): Promise<number> {
  const cursor: Cursor = { processUuid: undefined, position: 0 };
  let delay = 250;
  let connectedOnce = false;
  for (;;) {
    if (o.signal.aborted) return EXIT.interrupted;
    const queue: SubscriptionEvent[] = [];
    let wake: (() => void) | undefined;
    let client: SvcClient | undefined;
    try {
      const token = await accessToken(o.creds, o.ui);
      const transport = await connectWss({
        url: o.api.server,
        ca: o.api.cas.join('\n'),
        ...(token === undefined ? {} : { token }),
        ...(o.target === undefined ? {} : { targetHost: o.target }),
      });
      client = new SvcClient({
        transport,
        ...(token === undefined ? {} : { token }),
        ...(o.target === undefined ? {} : { targetHost: o.target }),
      });
      try {
        await client.subscribe(o.name, ['STDOUT', 'START', 'REMOVED'], (event) => {
          queue.push(event);
          wake?.();
        });
      } catch (error) {
        const status = (error as { status?: number }).status;
        if (status === 404) throw new CliError(`no application named ${o.name}`, EXIT.notFound);
        if (!connectedOnce) throw new EventsUnavailable(String((error as Error).message));
        throw error;
      }
      connectedOnce = true;
      delay = 250;
      // Subscribed first, then backfill: nothing written in between is missed.
      if (!(await backfill(o, cursor))) return EXIT.ok;
      const onAbort = (): void => wake?.();
      o.signal.addEventListener('abort', onAbort, { once: true });
      try {
        for (;;) {
          const event = queue.shift();
          if (event === undefined) {
            if (o.signal.aborted) return EXIT.interrupted;
            await new Promise<void>((resolve) => (wake = resolve));
            wake = undefined;
            continue;
          }
          if (event.event_type === '__disconnected__') throw new Error('disconnected');
          if (event.event_type === 'REMOVED') return EXIT.ok;
          const data = (event as { data?: Record<string, unknown> }).data ?? {};
          const uuid = typeof data['process_uuid'] === 'string' ? data['process_uuid'] : undefined;
          if (event.event_type === 'START') {
            if (uuid !== undefined && uuid !== cursor.processUuid) {
              cursor.processUuid = uuid;
              cursor.position = 0;
            }
            continue;
          }
          if (event.event_type !== 'STDOUT') continue;
          if (uuid !== undefined && uuid !== cursor.processUuid) {
            // Output of a process we have not seen start: read it from byte 0.
            cursor.processUuid = uuid;
            cursor.position = 0;
            if (!(await backfill(o, cursor))) return EXIT.ok;
            continue;
          }
          const position = typeof data['position'] === 'number' ? data['position'] : cursor.position;
          const bytes = Buffer.from(typeof data['output'] === 'string' ? data['output'] : '', 'utf8');
          if (position > cursor.position) {
            // A gap (events dropped): read it from the file.
            if (!(await backfill(o, cursor))) return EXIT.ok;
            continue;
          }
          const end = position + bytes.length;
          if (end > cursor.position) {
            o.write(bytes.subarray(cursor.position - position));
            cursor.position = end;
          }
        }
      } finally {
        o.signal.removeEventListener('abort', onAbort);
      }
    } catch (error) {
      if (o.signal.aborted) return EXIT.interrupted;
      if (error instanceof EventsUnavailable) throw error;
      // Retry only connection failures, and only once events have worked on this server.
      const transportFailure = !(error instanceof CliError) || error.code === EXIT.unreachable;
      if (!transportFailure) throw error;
      if (!connectedOnce)
        throw error instanceof CliError ? error : new EventsUnavailable(String((error as Error).message));
      o.ui.info(`svc: connection lost (${(error as Error).message}); resuming at byte ${cursor.position}…`);
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, RECONNECT_MAX_MS);
    } finally {
      await client?.close().catch(() => undefined);
    }
  }
}
