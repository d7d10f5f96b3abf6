// Applications' output as MCP resources, `svc://app/<name>/output`: reading one gives the latest
// output (the last OUTPUT_LIMIT bytes, with their byte positions); subscribing sends
// `notifications/resources/updated` whenever the output changes (new bytes, or a new process).
// Every request carries the session's current bearer, so a revoked or expired token ends the
// subscription (svcd answers 401) and a viewer reads only what it may read.
//
// What a subscription costs while nothing happens (docs/mcp.md "Resources"):
// - its process runs: one long poll held by svcd (POLL_SECONDS), woken by new bytes or the exit;
// - no process runs (it exited, or never started), or a long poll answers at once with nothing
//   new: no request at all. It waits for a START or REMOVED event of the application on the
//   principal's shared event connection (event-feed.ts), and looks again after EVENT_SAFETY_MS.
//   When svcd gives no events (the principal lacks app-subscribe on the app, or the connection
//   fails) it looks again after BACKOFF_FIRST_MS, doubling up to BACKOFF_MAX_MS;
// - failures (svcd unreachable, 5xx) wait the same backoff; 401, 403 and 404 end it.
// A busy application costs at most one notification, and two requests, per NOTIFY_INTERVAL_MS.
import { EventsRefused, pause, type AppWatch } from './event-feed.ts';
import { header, type SvcdAnswer, type SvcdCaller } from './svcd.ts';
import { OUTPUT_LIMIT } from './tools.ts';

export const OUTPUT_URI_TEMPLATE = 'svc://app/{name}/output';
const URI = /^svc:\/\/app\/([A-Za-z0-9_.-]{1,128})\/output$/;
/** A position past any file: svcd answers it with the current end (nothing to read). */
const END = '9007199254740991';
/** Seconds each long poll of a subscription waits for new output. */
const POLL_SECONDS = 25;
/** A long poll that answers sooner than this with nothing new is not repeated at once. */
const QUICK_ANSWER_MS = 1000;
/** After a notification, the next look at the output waits this long. */
const NOTIFY_INTERVAL_MS = 1000;
/** Waiting without events: look again after this, doubling up to BACKOFF_MAX_MS. */
export const BACKOFF_FIRST_MS = 2000;
export const BACKOFF_MAX_MS = 60_000;
/** Waiting with events: look again after this anyway. */
export const EVENT_SAFETY_MS = 10 * 60_000;
/** Subscriptions one session may hold. */
export const MAX_SUBSCRIPTIONS = 32;

export function outputUri(app: string): string {
  return `svc://app/${app}/output`;
}

export function appOfUri(uri: string): string | undefined {
  return URI.exec(uri)?.[1];
}

export class ResourceError extends Error {
  readonly status: number | undefined;
  /** svcd's error code (`app_not_found`, `not_found` …), when it sent one. */
  readonly code: string | undefined;
  constructor(message: string, status?: number, code?: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Where an application's output stands, from one answer of GET /svc/app/{name}/output. */
export interface OutputState {
  /** The process the answer is about; undefined when the application never ran one. */
  readonly process: string | undefined;
  /** The position after the answer's bytes (the end, for a read at END). */
  readonly position: number;
  /** The process has exited (and the read reached the end of its output). */
  readonly exited: boolean;
}

function stateOf(answer: SvcdAnswer): OutputState {
  return {
    process: header(answer, 'x-process-uuid'),
    position: Number(header(answer, 'x-output-position') ?? '0'),
    exited: header(answer, 'x-exit-code') !== undefined || header(answer, 'x-exited') === 'true',
  };
}

/** Whether the resource changed between two looks at its end. */
export function changed(before: OutputState, after: OutputState): boolean {
  return before.process !== after.process || before.position !== after.position;
}

/** Nothing will be written until a process starts: the subscription waits for a sign of one. */
export function waitsForProcess(state: OutputState): boolean {
  return state.exited || state.process === undefined;
}

function codeOf(body: Buffer): string | undefined {
  try {
    const code = (JSON.parse(body.toString('utf8')) as { error?: unknown }).error;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}

async function outputAt(
  call: SvcdCaller,
  token: string,
  app: string,
  query: Record<string, string>,
  signal?: AbortSignal,
): Promise<{ text: string; state: OutputState }> {
  const search = new URLSearchParams(query).toString();
  const timeout = Number(query['timeout'] ?? 0);
  const answer = await call({
    method: 'GET',
    path: `/svc/app/${encodeURIComponent(app)}/output?${search}`,
    token,
    timeoutMs: (timeout + 30) * 1000,
    ...(signal === undefined ? {} : { signal }),
  });
  if (answer.status !== 200)
    throw new ResourceError(
      `svcd answered ${answer.status}: ${answer.body.toString('utf8').slice(0, 500)}`,
      answer.status,
      codeOf(answer.body),
    );
  return { text: answer.body.toString('utf8'), state: stateOf(answer) };
}

/** The latest output of `app`: the last OUTPUT_LIMIT bytes and where they start and end. */
export async function readLatestOutput(
  call: SvcdCaller,
  token: string,
  app: string,
): Promise<{ text: string; from: number; to: number }> {
  const { state } = await outputAt(call, token, app, { stdout_position: END });
  const from = Math.max(0, state.position - OUTPUT_LIMIT);
  const read = await outputAt(call, token, app, {
    stdout_position: String(from),
    stdout_maxsize: String(OUTPUT_LIMIT),
    ...(state.process === undefined ? {} : { process_uuid: state.process }),
  });
  return { text: read.text, from, to: read.state.position };
}

export interface OutputSubscriptionsOptions {
  call: SvcdCaller;
  /** The session's current bearer (the client may present a refreshed one on each request). */
  token: () => string;
  /** A watch on the application's events for the session's principal (event-feed.ts). */
  watch: (app: string) => Promise<AppWatch>;
  updated: (uri: string) => Promise<void>;
  log: (message: string) => void;
}

/** What one subscription's loop keeps between its looks at the output. */
interface Follow {
  readonly uri: string;
  readonly app: string;
  readonly signal: AbortSignal;
  state: OutputState;
  watch: AppWatch | undefined;
  /** svcd refused this principal the application's events: timers only. */
  refused: boolean;
  /** `watch.seen` before the last look at the output. */
  mark: number;
  backoff: number;
}

/** One session's subscriptions: a loop per subscribed application. */
export class OutputSubscriptions {
  readonly #loops = new Map<string, AbortController>();
  readonly #options: OutputSubscriptionsOptions;

  constructor(options: OutputSubscriptionsOptions) {
    this.#options = options;
  }

  get size(): number {
    return this.#loops.size;
  }

  async subscribe(uri: string): Promise<void> {
    const app = appOfUri(uri);
    if (app === undefined) throw new ResourceError(`not an svc output resource: ${uri.slice(0, 200)}`);
    if (this.#loops.has(uri)) return;
    if (this.#loops.size >= MAX_SUBSCRIPTIONS)
      throw new ResourceError(`at most ${MAX_SUBSCRIPTIONS} subscriptions per session`);
    // Start at the current end (and check the caller may read it: a refusal fails the subscribe).
    const { state } = await outputAt(this.#options.call, this.#options.token(), app, {
      stdout_position: END,
    });
    if (this.#loops.has(uri)) return;
    const controller = new AbortController();
    this.#loops.set(uri, controller);
    const follow: Follow = {
      uri,
      app,
      signal: controller.signal,
      state,
      watch: undefined,
      refused: false,
      mark: 0,
      backoff: BACKOFF_FIRST_MS,
    };
    void this.#follow(follow).finally(() => {
      follow.watch?.close();
      if (this.#loops.get(uri) === controller) this.#loops.delete(uri);
    });
  }

  unsubscribe(uri: string): void {
    this.#loops.get(uri)?.abort();
    this.#loops.delete(uri);
  }

  close(): void {
    for (const controller of this.#loops.values()) controller.abort();
    this.#loops.clear();
  }

  async #follow(f: Follow): Promise<void> {
    const { call, token, updated, log } = this.#options;
    while (!f.signal.aborted) {
      try {
        await this.#waitForSign(f);
        if (f.signal.aborted) return;
        f.mark = f.watch?.seen ?? 0;
        const { state } = await outputAt(call, token(), f.app, { stdout_position: END }, f.signal);
        const news = changed(f.state, state);
        f.state = state;
        if (news) {
          f.backoff = BACKOFF_FIRST_MS;
          // Only "something new": the client reads what it wants (resources/read or read_output).
          await updated(f.uri);
          await pause(NOTIFY_INTERVAL_MS, f.signal);
        }
      } catch (error) {
        if (f.signal.aborted) return;
        const status = error instanceof ResourceError ? error.status : undefined;
        log(`subscription to ${f.uri}: ${error instanceof Error ? error.message : String(error)}`);
        if (status === 401 || status === 403 || status === 404) return;
        await this.#backOff(f);
      }
    }
  }

  /** Returns when the output may have changed since the last look. */
  async #waitForSign(f: Follow): Promise<void> {
    if (!waitsForProcess(f.state) && (await this.#longPoll(f))) return;
    // Nothing will come from a long poll: wait for an event of the application, or a timer.
    if (f.watch?.live !== true && !f.refused) {
      f.watch?.close();
      f.watch = undefined;
      try {
        f.watch = await this.#options.watch(f.app);
        return; // subscribed now: look once more, events from here on are seen
      } catch (error) {
        if (f.signal.aborted) return;
        f.refused = error instanceof EventsRefused;
        if (!f.refused)
          this.#options.log(
            `subscription to ${f.uri}: no event connection (${error instanceof Error ? error.message : String(error)}); looking again by timer`,
          );
      }
    }
    if (f.watch?.live === true) await f.watch.until(f.mark, EVENT_SAFETY_MS, f.signal);
    else await this.#backOff(f);
  }

  /**
   * Long polls the running process's output until new bytes or its exit (true), or until a poll
   * answers at once with nothing new (false: the caller waits as for an exited process).
   */
  async #longPoll(f: Follow): Promise<boolean> {
    while (!f.signal.aborted) {
      const began = Date.now();
      try {
        const { state } = await outputAt(
          this.#options.call,
          this.#options.token(),
          f.app,
          {
            process_uuid: f.state.process!,
            stdout_position: String(f.state.position),
            stdout_maxsize: '1',
            timeout: String(POLL_SECONDS),
          },
          f.signal,
        );
        if (state.position > f.state.position || state.exited) return true;
      } catch (error) {
        // That process's output is no longer kept (newer processes rotated it out): look again.
        if (error instanceof ResourceError && error.status === 404 && error.code === 'not_found') return true;
        throw error;
      }
      if (Date.now() - began < QUICK_ANSWER_MS) return false;
    }
    return true;
  }

  async #backOff(f: Follow): Promise<void> {
    await pause(f.backoff, f.signal);
    f.backoff = Math.min(f.backoff * 2, BACKOFF_MAX_MS);
  }
}
