// Applications' output as MCP resources, `svc://app/<name>/output`: reading one gives the latest
// output (the last OUTPUT_LIMIT bytes, with their byte positions); subscribing follows the output
// with svcd's long poll by byte position and sends `notifications/resources/updated` whenever new
// bytes arrive. Every request carries the session's current bearer, so a revoked or expired token
// ends the subscription (svcd answers 401) and a viewer reads only what it may read.
import { header, type SvcdCaller } from './svcd.ts';
import { OUTPUT_LIMIT } from './tools.ts';

export const OUTPUT_URI_TEMPLATE = 'svc://app/{name}/output';
const URI = /^svc:\/\/app\/([A-Za-z0-9_.-]{1,128})\/output$/;
/** A position past any file: svcd answers it with the current end (nothing to read). */
const END = '9007199254740991';
/** Seconds each long poll of a subscription waits for new output. */
const POLL_SECONDS = 25;
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
  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}

async function outputAt(
  call: SvcdCaller,
  token: string,
  app: string,
  query: Record<string, string>,
  signal?: AbortSignal,
): Promise<{ text: string; next: number }> {
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
    );
  return { text: answer.body.toString('utf8'), next: Number(header(answer, 'x-output-position') ?? '0') };
}

/** The latest output of `app`: the last OUTPUT_LIMIT bytes and where they start and end. */
export async function readLatestOutput(
  call: SvcdCaller,
  token: string,
  app: string,
): Promise<{ text: string; from: number; to: number }> {
  const { next: end } = await outputAt(call, token, app, { stdout_position: END });
  const from = Math.max(0, end - OUTPUT_LIMIT);
  const read = await outputAt(call, token, app, {
    stdout_position: String(from),
    stdout_maxsize: String(OUTPUT_LIMIT),
  });
  return { text: read.text, from, to: read.next };
}

/** One session's subscriptions: a long-poll loop per subscribed application. */
export class OutputSubscriptions {
  readonly #loops = new Map<string, AbortController>();
  readonly call: SvcdCaller;
  /** The session's current bearer (the client may present a refreshed one on each request). */
  readonly token: () => string;
  readonly updated: (uri: string) => Promise<void>;
  readonly log: (message: string) => void;

  constructor(
    call: SvcdCaller,
    token: () => string,
    updated: (uri: string) => Promise<void>,
    log: (message: string) => void,
  ) {
    this.call = call;
    this.token = token;
    this.updated = updated;
    this.log = log;
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
    const { next } = await outputAt(this.call, this.token(), app, { stdout_position: END });
    const controller = new AbortController();
    this.#loops.set(uri, controller);
    void this.#follow(uri, app, next, controller.signal);
  }

  unsubscribe(uri: string): void {
    this.#loops.get(uri)?.abort();
    this.#loops.delete(uri);
  }

  close(): void {
    for (const controller of this.#loops.values()) controller.abort();
    this.#loops.clear();
  }

  async #follow(uri: string, app: string, start: number, signal: AbortSignal): Promise<void> {
    let position = start;
    while (!signal.aborted) {
      try {
        const read = await outputAt(
          this.call,
          this.token(),
          app,
          { stdout_position: String(position), stdout_maxsize: '1', timeout: String(POLL_SECONDS) },
          signal,
        );
        if (signal.aborted) return;
        if (read.next > position) {
          // Only "something new": the client reads what it wants (resources/read or read_output).
          position = (await outputAt(this.call, this.token(), app, { stdout_position: END }, signal)).next;
          await this.updated(uri);
        }
      } catch (error) {
        if (signal.aborted) return;
        const status = error instanceof ResourceError ? error.status : undefined;
        this.log(`subscription to ${uri} ended: ${error instanceof Error ? error.message : String(error)}`);
        if (status === 401 || status === 403 || status === 404) {
          this.#loops.delete(uri);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 1000).unref());
      }
    }
  }
}
