// waitForAsyncRun (spec "Run-wait contract", outcomes in "Run-wait outcome").
//
//   1 subscribe STDOUT,EXIT,REMOVED ─▶ 2 backfill GET output from 0 (also sees an earlier exit)
//   ─▶ 3 dedupe stdout by byte position ─▶ 4 wait: EXIT │ REMOVED │ __disconnected__ │ timeout
//   5 outcome: exit code (may be negative) │ AppRemovedError │ TransportDisconnectedError │ null
//   6 cleanup: unsubscribe best-effort (not on a dead transport); delete the transient app
//     best-effort ONLY after an observed exit (never after REMOVED or a disconnect)
//
// Deleting a running app publishes REMOVED and no EXIT for the process the delete stops, so an
// EXIT is an exit and a REMOVED is a removal: no confirming round trip.
import { AppRemovedError, ApiError, SvcClientError, TransportDisconnectedError } from './errors.ts';
import type { SvcClient } from './client.ts';
import { isPersistent, type PersistentTransport } from './transport.ts';
import type { AsyncRun, SubscriptionEvent } from './types.ts';

export interface WaitForAsyncRunOptions {
  /** Give up after this many milliseconds: resolves null and unsubscribes. Default: no limit. */
  timeoutMs?: number;
  /** Output of the run, each byte once, in order; `position` is the byte offset of its first byte. */
  onOutput?: (output: string, position: number) => void;
  /** Delete the transient app after an observed exit (default true). */
  deleteAfterExit?: boolean;
}

type Outcome =
  | { kind: 'exit'; code: number }
  | { kind: 'removed' }
  | { kind: 'disconnected'; message: string | undefined; local: boolean }
  | { kind: 'timeout' };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Resolves the exit code (negative for a signal, NaN when the daemon could not know it), or null
 * when `timeoutMs` passed first. Throws AppRemovedError (app removed before its exit) or
 * TransportDisconnectedError. Needs a client on a persistent transport (TCP or WSS).
 */
export async function waitForAsyncRun(
  client: SvcClient,
  run: AsyncRun,
  options: WaitForAsyncRunOptions = {},
): Promise<number | null> {
  if (!isPersistent(client.transport))
    throw new SvcClientError(
      `waitForAsyncRun needs a persistent transport (TCP or WSS), not ${client.transport.kind}`,
    );
  const transport: PersistentTransport = client.transport;

  let settle!: (outcome: Outcome) => void;
  const outcome = new Promise<Outcome>((resolve) => (settle = resolve));
  let timer: ReturnType<typeof setTimeout> | undefined;
  if (options.timeoutMs !== undefined)
    timer = setTimeout(() => settle({ kind: 'timeout' }), options.timeoutMs);

  // Byte offset up to which output was handed to onOutput (step 3).
  let delivered = 0;
  const emit = (output: string, position: number): void => {
    const bytes = encoder.encode(output);
    const end = position + bytes.byteLength;
    if (end <= delivered) return;
    const fresh = position >= delivered ? bytes : bytes.subarray(delivered - position);
    const from = Math.max(position, delivered);
    delivered = end;
    options.onOutput?.(fresh === bytes ? output : decoder.decode(fresh), from);
  };

  // Events that arrive during the backfill wait for it, then apply in order.
  let backfilled = false;
  const early: SubscriptionEvent[] = [];
  const apply = (event: SubscriptionEvent): void => {
    switch (event.event_type) {
      case 'STDOUT': {
        const data = event.data as { output?: unknown; position?: unknown; process_uuid?: unknown };
        if (data.process_uuid !== undefined && data.process_uuid !== run.process_uuid) return;
        if (typeof data.output === 'string' && typeof data.position === 'number')
          emit(data.output, data.position);
        return;
      }
      case 'EXIT': {
        const data = event.data as { exit_code?: unknown; process_uuid?: unknown };
        if (data.process_uuid !== undefined && data.process_uuid !== run.process_uuid) return;
        settle({ kind: 'exit', code: typeof data.exit_code === 'number' ? data.exit_code : Number.NaN });
        return;
      }
      case 'REMOVED':
        settle({ kind: 'removed' });
        return;
      case '__disconnected__':
        settle({
          kind: 'disconnected',
          message: typeof event.data?.['message'] === 'string' ? event.data['message'] : undefined,
          local: transport.demux.stopped,
        });
        return;
      default:
        return;
    }
  };
  const callback = (event: SubscriptionEvent): void => {
    if (backfilled) apply(event);
    else early.push(event);
  };

  let subscriptionId: string | undefined;
  try {
    // Step 1.
    try {
      subscriptionId = (await client.subscribe(run.name, ['STDOUT', 'EXIT', 'REMOVED'], callback))
        .subscription_id;
    } catch (error) {
      // The app is already gone (removed, or a lifecycle cleanup after its exit we did not see).
      if (error instanceof ApiError && error.code === 'app_not_found')
        throw new AppRemovedError(run.name, { cause: error });
      throw error;
    }
    // Step 2: backfill from position 0 until caught up; an exit code here means it already exited.
    let position = 0;
    for (;;) {
      let chunk;
      try {
        chunk = await client.getOutput(run.name, { position, processUuid: run.process_uuid });
      } catch (error) {
        // Removed between the subscribe and this read: its REMOVED event is on the way or queued.
        if (error instanceof ApiError && error.code === 'app_not_found') {
          settle({ kind: 'removed' });
          break;
        }
        throw error;
      }
      if (chunk.bytes > 0) emit(chunk.output, position);
      if (chunk.exitCode !== undefined && chunk.bytes === 0) {
        settle({ kind: 'exit', code: chunk.exitCode ?? Number.NaN });
        break;
      }
      if (chunk.bytes === 0 || chunk.nextPosition <= position) break;
      position = chunk.nextPosition;
    }
    backfilled = true;
    for (const event of early.splice(0)) apply(event);

    // Step 4.
    const result = await outcome;
    // Steps 5 and 6.
    switch (result.kind) {
      case 'exit':
        await bestEffortUnsubscribe();
        if (options.deleteAfterExit !== false)
          await client.deleteApplication(run.name).catch(() => undefined);
        return result.code;
      case 'timeout':
        await bestEffortUnsubscribe();
        return null;
      case 'removed':
        await bestEffortUnsubscribe();
        throw new AppRemovedError(run.name);
      case 'disconnected':
        if (!result.local) await bestEffortUnsubscribe();
        throw new TransportDisconnectedError(
          result.local
            ? 'transport disconnected while waiting for the run'
            : `forwarded route disconnected while waiting for the run${result.message === undefined ? '' : `: ${result.message}`}`,
        );
    }
    return null;
  } catch (error) {
    if (subscriptionId !== undefined) transport.demux.unregister(subscriptionId);
    throw error;
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }

  async function bestEffortUnsubscribe(): Promise<void> {
    if (subscriptionId === undefined) return;
    const id = subscriptionId;
    subscriptionId = undefined;
    if (transport.demux.stopped) {
      transport.demux.unregister(id);
      return;
    }
    await client.unsubscribe(id).catch(() => undefined);
  }
}
