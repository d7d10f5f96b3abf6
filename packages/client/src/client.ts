// SvcClient: one typed method per API operation of the daemon (CONTRACT §5), over any transport.
// The method builds a transport-neutral call (path, query, body, bearer, X-Target-Host); the
// transport only carries it. Subscriptions need a persistent transport (TCP or WSS).
import { TARGET_HOST_HEADER, type EventType } from '@svc/protocol';
import { apiErrorFrom, SvcClientError } from './errors.ts';
import { waitForAsyncRun, type WaitForAsyncRunOptions } from './run-wait.ts';
import {
  isPersistent,
  type PersistentTransport,
  type Transport,
  type WireCall,
  type WireResult,
} from './transport.ts';
import type {
  AppDefinition,
  AppInfo,
  AsyncRun,
  AuthConfig,
  EventCallback,
  EventSelection,
  JsonObject,
  OutputChunk,
  OutputOptions,
  RegisteredApp,
  RunOptions,
  SelfInfo,
  SubscriptionInfo,
  SyncRunResult,
  TaskOptions,
  TaskResult,
} from './types.ts';

export interface SvcClientOptions {
  transport: Transport;
  /** Bearer access token (RFC 6750). Bearer-only: no refresh; see setToken. */
  token?: string;
  /** `host[:port]` of the target instance when this client talks to a gateway (X-Target-Host). */
  targetHost?: string;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export interface RegisterOptions extends CallOptions {
  /** Subscribe atomically with the registration (TCP/WSS only): no event of the new process is missed. */
  subscribeEvents?: EventSelection;
  /** Callback of that subscription; required with subscribeEvents. */
  onEvent?: EventCallback;
}

const JSON_TYPE = 'application/json';

/** Default `lifecycle` of `run()`: the transient app is kept this long after its exit. */
export const RUN_LIFECYCLE_SECONDS = 300;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

function seconds(value: number): string {
  return String(value);
}

function eventsQuery(events: EventSelection | undefined): string {
  return (events ?? []).join(',');
}

function segment(value: string): string {
  return encodeURIComponent(value);
}

export class SvcClient {
  readonly transport: Transport;
  #token: string | undefined;
  readonly #targetHost: string | undefined;

  constructor(options: SvcClientOptions) {
    this.transport = options.transport;
    this.#token = options.token;
    this.#targetHost = options.targetHost;
  }

  // ---- tokens (spec "Client token contract" rule 5: bearer-only, in memory, no refresh) ----

  /**
   * Replaces the bearer for later requests. REST uses it at once. A persistent transport (TCP, WSS)
   * stays pinned to the principal it authenticated first: reconnect after a token change.
   */
  setToken(token: string): void {
    this.#token = token;
  }

  clearToken(): void {
    this.#token = undefined;
  }

  get hasToken(): boolean {
    return this.#token !== undefined;
  }

  async close(): Promise<void> {
    await this.transport.close();
  }

  // ---- applications ----

  listApplications(options?: CallOptions): Promise<AppInfo[]> {
    return this.#json('GET', '/svc/applications', {}, options);
  }

  getApplication(name: string, options?: CallOptions): Promise<AppInfo> {
    return this.#json('GET', `/svc/app/${segment(name)}`, {}, options);
  }

  /** Registers or replaces an app. With `subscribeEvents` (TCP/WSS) the subscription is atomic. */
  async registerApplication(
    name: string,
    definition: AppDefinition,
    options: RegisterOptions = {},
  ): Promise<RegisteredApp> {
    const query: Record<string, string> = {};
    if (options.subscribeEvents !== undefined) {
      if (options.onEvent === undefined)
        throw new TypeError('registerApplication: subscribeEvents needs onEvent');
      query['subscribe_events'] = eventsQuery(options.subscribeEvents);
    }
    const app = await this.#json<RegisteredApp>(
      'PUT',
      `/svc/app/${segment(name)}`,
      { query, body: definition },
      options,
    );
    if (options.onEvent !== undefined && typeof app.subscription_id === 'string')
      this.#persistent('registerApplication with subscribeEvents').demux.register(
        app.subscription_id,
        options.onEvent,
      );
    return app;
  }

  deleteApplication(name: string, options?: CallOptions): Promise<JsonObject> {
    return this.#json('DELETE', `/svc/app/${segment(name)}`, {}, options);
  }

  enableApplication(name: string, options?: CallOptions): Promise<AppInfo> {
    return this.#json('POST', `/svc/app/${segment(name)}/enable`, {}, options);
  }

  disableApplication(name: string, options?: CallOptions): Promise<AppInfo> {
    return this.#json('POST', `/svc/app/${segment(name)}/disable`, {}, options);
  }

  /** 0 healthy, 1 unhealthy (the daemon answers 503 with body 1; that is not an error here). */
  async getApplicationHealth(name: string, options?: CallOptions): Promise<0 | 1> {
    const result = await this.#call(
      { method: 'GET', path: `/svc/app/${segment(name)}/health` },
      options,
      [503],
    );
    return decoder.decode(result.body).trim() === '0' ? 0 : 1;
  }

  /** Reads captured output from a byte position (`GET /svc/app/{name}/output`). */
  async getOutput(name: string, options: OutputOptions & CallOptions = {}): Promise<OutputChunk> {
    const query: Record<string, string> = {};
    const position = options.position ?? 0;
    query['stdout_position'] = String(position);
    if (options.index !== undefined) query['stdout_index'] = String(options.index);
    if (options.maxSize !== undefined) query['stdout_maxsize'] = String(options.maxSize);
    if (options.processUuid !== undefined) query['process_uuid'] = options.processUuid;
    if (options.timeoutSeconds !== undefined) query['timeout'] = seconds(options.timeoutSeconds);
    const result = await this.#call(
      { method: 'GET', path: `/svc/app/${segment(name)}/output`, query },
      options,
    );
    const next = Number(result.headers['x-output-position'] ?? position + result.body.byteLength);
    const exit = result.headers['x-exit-code'];
    return {
      output: decoder.decode(result.body),
      bytes: result.body.byteLength,
      nextPosition: next,
      exitCode: exit !== undefined ? Number(exit) : result.headers['x-exited'] === 'true' ? null : undefined,
      processUuid: result.headers['x-process-uuid'],
    };
  }

  // ---- runs ----

  /**
   * Starts a one-off run (`POST /svc/app/run`): a new command, or `{name}` to run a copy of an app.
   * `lifecycleSeconds` defaults to RUN_LIFECYCLE_SECONDS (the daemon's own default is 0 = remove at
   * exit): the transient app must outlive its process for waitForAsyncRun to see an exit that came
   * before it subscribed, and to tell an exit from a removal; waitForAsyncRun deletes it after the
   * observed exit.
   */
  run(definition: AppDefinition, options: RunOptions & CallOptions = {}): Promise<AsyncRun> {
    const query = runQuery({ lifecycleSeconds: RUN_LIFECYCLE_SECONDS, ...options });
    return this.#json('POST', '/svc/app/run', { query, body: definition }, options);
  }

  /** Runs to completion (`POST /svc/app/syncrun`). */
  async syncRun(definition: AppDefinition, options: RunOptions & CallOptions = {}): Promise<SyncRunResult> {
    const result = await this.#call(
      { method: 'POST', path: '/svc/app/syncrun', query: runQuery(options), ...jsonBody(definition) },
      options,
    );
    const exit = result.headers['x-exit-code'];
    return { output: decoder.decode(result.body), exitCode: exit === undefined ? undefined : Number(exit) };
  }

  /**
   * Waits for a run started with `run()` (spec "Run-wait contract"): resolves the exit code (may be
   * negative), or null on `timeoutMs`; throws AppRemovedError or TransportDisconnectedError.
   */
  waitForAsyncRun(run: AsyncRun, options: WaitForAsyncRunOptions = {}): Promise<number | null> {
    return waitForAsyncRun(this, run, options);
  }

  // ---- tasks (submitter side; the worker side is runWorker) ----

  async runTask(
    name: string,
    payload: Uint8Array | string | JsonObject,
    options: TaskOptions & CallOptions = {},
  ): Promise<TaskResult> {
    const query: Record<string, string> = {};
    if (options.timeoutSeconds !== undefined) query['timeout'] = seconds(options.timeoutSeconds);
    if (options.taskId !== undefined) query['task_id'] = options.taskId;
    let body: Uint8Array;
    let contentType: string;
    if (payload instanceof Uint8Array) [body, contentType] = [payload, 'application/octet-stream'];
    else if (typeof payload === 'string')
      [body, contentType] = [encoder.encode(payload), 'text/plain; charset=utf-8'];
    else [body, contentType] = [encoder.encode(JSON.stringify(payload)), JSON_TYPE];
    const result = await this.#call(
      {
        method: 'POST',
        path: `/svc/app/${segment(name)}/task`,
        query,
        headers: { 'content-type': options.contentType ?? contentType },
        body,
      },
      options,
    );
    return {
      taskId: result.headers['x-task-id'],
      contentType: result.contentType,
      body: result.body,
      text: () => decoder.decode(result.body),
      json: <T>() => JSON.parse(decoder.decode(result.body)) as T,
    };
  }

  cancelTasks(name: string, options: { taskId?: string } & CallOptions = {}): Promise<JsonObject> {
    const query: Record<string, string> = options.taskId === undefined ? {} : { task_id: options.taskId };
    return this.#json('DELETE', `/svc/app/${segment(name)}/task`, { query }, options);
  }

  // ---- events (TCP/WSS only) ----

  /** Subscribes to the events of one app. `callback` gets them serially, then `__disconnected__` on stop. */
  async subscribe(
    name: string,
    events: EventSelection,
    callback: EventCallback,
    options?: CallOptions,
  ): Promise<SubscriptionInfo> {
    const transport = this.#persistent('subscribe');
    const info = await this.#json<SubscriptionInfo>(
      'POST',
      `/svc/app/${segment(name)}/subscribe`,
      { query: { events: eventsQuery(events) } },
      options,
    );
    transport.demux.register(info.subscription_id, callback);
    return info;
  }

  /** Subscribes to the events of every app (needs app-view-all); `app_name` is `*`. */
  async subscribeAll(
    events: EventSelection,
    callback: EventCallback,
    options?: CallOptions,
  ): Promise<SubscriptionInfo> {
    const transport = this.#persistent('subscribeAll');
    const info = await this.#json<SubscriptionInfo>(
      'POST',
      '/svc/subscribe',
      { query: { events: eventsQuery(events) } },
      options,
    );
    transport.demux.register(info.subscription_id, callback);
    return info;
  }

  /**
   * Removes a subscription. The callback is detached and buffered events discarded first, so no
   * event reaches it after this call starts, whatever the daemon answers.
   */
  unsubscribe(subscription: string | SubscriptionInfo, options?: CallOptions): Promise<JsonObject> {
    const transport = this.#persistent('unsubscribe');
    const id = typeof subscription === 'string' ? subscription : subscription.subscription_id;
    transport.demux.unregister(id);
    return this.#json('DELETE', '/svc/subscribe', { query: { subscription_id: id } }, options);
  }

  // ---- host: labels, config, resources ----

  listLabels(options?: CallOptions): Promise<Record<string, string>> {
    return this.#json('GET', '/svc/labels', {}, options);
  }

  setLabel(key: string, value: string, options?: CallOptions): Promise<JsonObject> {
    return this.#json('PUT', `/svc/label/${segment(key)}`, { query: { value } }, options);
  }

  deleteLabel(key: string, options?: CallOptions): Promise<JsonObject> {
    return this.#json('DELETE', `/svc/label/${segment(key)}`, {}, options);
  }

  getConfig(options?: CallOptions): Promise<JsonObject> {
    return this.#json('GET', '/svc/config', {}, options);
  }

  /**
   * Merges a partial sectioned config (`{BaseConfig: {LogLevel: 'DEBUG'}}`); returns the whole
   * config plus `restart_required` (accepted keys that apply at the next start).
   */
  updateConfig(partial: JsonObject, options?: CallOptions): Promise<JsonObject> {
    return this.#json('POST', '/svc/config', { body: partial }, options);
  }

  getResources(options?: CallOptions): Promise<JsonObject> {
    return this.#json('GET', '/svc/resources', {}, options);
  }

  // ---- authorization ----

  getSelf(options?: CallOptions): Promise<SelfInfo> {
    return this.#json('GET', '/svc/principal/self', {}, options);
  }

  listRoles(options?: CallOptions): Promise<JsonObject> {
    return this.#json('GET', '/svc/roles', {}, options);
  }

  setRole(role: string, permissions: readonly string[], options?: CallOptions): Promise<JsonObject> {
    return this.#json('POST', `/svc/role/${segment(role)}`, { body: { permissions } }, options);
  }

  deleteRole(role: string, options?: CallOptions): Promise<JsonObject> {
    return this.#json('DELETE', `/svc/role/${segment(role)}`, {}, options);
  }

  listPermissions(options?: CallOptions): Promise<unknown> {
    return this.#json('GET', '/svc/permissions', {}, options);
  }

  listPrincipals(options?: CallOptions): Promise<unknown> {
    return this.#json('GET', '/svc/principals', {}, options);
  }

  setPrincipalRoles(id: string, roles: readonly string[], options?: CallOptions): Promise<JsonObject> {
    return this.#json('POST', `/svc/principal/${segment(id)}`, { body: { roles } }, options);
  }

  deletePrincipal(id: string, options?: CallOptions): Promise<JsonObject> {
    return this.#json('DELETE', `/svc/principal/${segment(id)}`, {}, options);
  }

  // ---- discovery (public) ----

  getAuthConfig(options?: CallOptions): Promise<AuthConfig> {
    return this.#json('GET', '/svc/auth/config', {}, options);
  }

  getProtectedResourceMetadata(options?: CallOptions): Promise<JsonObject> {
    return this.#json('GET', '/.well-known/oauth-protected-resource', {}, options);
  }

  getOpenApi(options?: CallOptions): Promise<JsonObject> {
    return this.#json('GET', '/openapi.json', {}, options);
  }

  // ---- plumbing ----

  /**
   * Sends one call with the bearer and X-Target-Host, and returns the raw result; a non-2xx status
   * (other than those in `accept`) throws the ApiError subclass of its registry code.
   */
  async request(call: WireCall, options?: CallOptions, accept: readonly number[] = []): Promise<WireResult> {
    return this.#call(call, options, accept);
  }

  async #call(
    call: WireCall,
    options: CallOptions | undefined,
    accept: readonly number[] = [],
  ): Promise<WireResult> {
    const headers: Record<string, string> = { ...call.headers };
    if (this.#token !== undefined) headers['authorization'] = `Bearer ${this.#token}`;
    if (this.#targetHost !== undefined) headers[TARGET_HOST_HEADER] = this.#targetHost;
    const signal = options?.signal ?? call.signal;
    const result = await this.transport.call({
      ...call,
      headers,
      ...(signal === undefined ? {} : { signal }),
    });
    if ((result.status < 200 || result.status > 299) && !accept.includes(result.status))
      throw apiErrorFrom(result.status, result.body, result.headers);
    return result;
  }

  async #json<T>(
    method: string,
    path: string,
    parts: { query?: Record<string, string>; body?: unknown },
    options: CallOptions | undefined,
  ): Promise<T> {
    const call: WireCall = { method, path, ...(parts.query === undefined ? {} : { query: parts.query }) };
    const result = await this.#call(
      parts.body === undefined ? call : { ...call, ...jsonBody(parts.body) },
      options,
    );
    if (result.body.byteLength === 0) return undefined as T;
    const text = decoder.decode(result.body);
    try {
      return JSON.parse(text) as T;
    } catch (error) {
      throw new SvcClientError(`${method} ${path}: the answer is not JSON`, { cause: error });
    }
  }

  #persistent(operation: string): PersistentTransport {
    if (!isPersistent(this.transport))
      throw new SvcClientError(
        `${operation} needs a persistent transport (TCP or WSS), not ${this.transport.kind}`,
      );
    return this.transport;
  }
}

function jsonBody(value: unknown): { headers: Record<string, string>; body: Uint8Array } {
  return { headers: { 'content-type': JSON_TYPE }, body: encoder.encode(JSON.stringify(value)) };
}

function runQuery(options: RunOptions): Record<string, string> {
  const query: Record<string, string> = {};
  if (options.timeoutSeconds !== undefined) query['timeout'] = seconds(options.timeoutSeconds);
  if (options.lifecycleSeconds !== undefined) query['lifecycle'] = seconds(options.lifecycleSeconds);
  return query;
}

export type { EventType };
