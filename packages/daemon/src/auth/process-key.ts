// Authentication of the worker side of the task RPC (GET/PUT /svc/app/{name}/task) by the process
// key alone (spec: Worker task loop). The key is never logged and never echoed in an error.
import { isForwarded, isLoopbackAddress } from '@svc/platform/process-key';
import { PROCESS_KEY_HEADER, SvcError } from '@svc/protocol';

/** Query parameter names that look like a process key (compared case-insensitively). */
const QUERY_KEY_NAMES = new Set(['process_key', 'key', 'x-svc-process-key', 'processkey', 'svc_process_key']);

/**
 * The remote address recorded for a connection: a forwarded WSS upgrade is marked, so that its
 * task session never counts as a direct loopback connection although its socket is loopback.
 */
export function connectionRemoteAddress(
  socketAddress: string,
  headers: Readonly<Record<string, string | string[] | undefined>>,
): string {
  return isForwarded(headers) ? `forwarded-via:${socketAddress}` : socketAddress;
}

export type KeyVerdict = 'ok' | 'superseded' | 'unknown';

/** What authenticateWorker needs of a persistent connection (api/types.ts PersistentConnection). */
export interface WorkerConnection {
  readonly principalId: string | undefined;
}

export interface WorkerRequest {
  readonly query: Readonly<Record<string, string>>;
  readonly headers: Readonly<Record<string, string>>;
  /** The peer: the socket's address, or the client's when svc-agent relayed the request. */
  readonly remoteAddress: string;
  /** True when svc-agent relayed the request and proved it (transports/agent-relay.ts). */
  readonly relayedByAgent?: boolean | undefined;
  readonly connection?: WorkerConnection | undefined;
}

/**
 * The process key (and its app) a bearer-less persistent connection first presented: the session
 * serves that one managed process's task RPC only.
 */
const pinnedKeys = new WeakMap<WorkerConnection, string>();

/** Whether a bearer-less connection has presented a valid process key (it may then send large frames). */
export function hasProcessKey(connection: WorkerConnection): boolean {
  return pinnedKeys.has(connection);
}

/** The application whose process key a bearer-less connection presented first, if any. */
export function processKeyApp(connection: WorkerConnection): string | undefined {
  const pinned = pinnedKeys.get(connection);
  return pinned === undefined ? undefined : pinned.slice(0, pinned.indexOf('\0'));
}

/**
 * Accept a worker request for `app` or throw, in this order:
 * 1. a process-key-like query parameter → 400 obsolete_process_key (even with a valid header);
 * 2. a non-loopback or forwarded (X-Forwarded-For, Forwarded) request → 403 process_key_transport,
 *    unless svc-agent relayed it from a loopback client (relayedByAgent, remoteAddress = the client);
 * 3. no X-Svc-Process-Key header → 400 bad_request;
 * 4. a key of a superseded process of the app → 412 process_superseded;
 * 5. any other key that is not the app's current one → 403 forbidden;
 * 6. a bearer-less persistent connection that already presented another key → 403 forbidden.
 */
export function authenticateWorker(
  request: WorkerRequest,
  app: string,
  verify: (app: string, key: string) => KeyVerdict,
): void {
  for (const name of Object.keys(request.query)) {
    if (QUERY_KEY_NAMES.has(name.toLowerCase()))
      throw new SvcError(
        'obsolete_process_key',
        `a process key in the query string ("${name}") is obsolete; send it only in the X-Svc-Process-Key header`,
      );
  }
  const relayed = request.relayedByAgent === true;
  if ((isForwarded(request.headers) && !relayed) || !isLoopbackAddress(request.remoteAddress))
    throw new SvcError(
      'process_key_transport',
      'a process key is accepted only from this host: a direct loopback connection to the daemon, or svc-agent relaying a loopback client (never through another proxy)',
    );
  const key = request.headers[PROCESS_KEY_HEADER];
  if (key === undefined || key === '')
    throw new SvcError('bad_request', 'the X-Svc-Process-Key header is required for the worker task RPC');
  const verdict = verify(app, key.trim());
  if (verdict === 'superseded')
    throw new SvcError(
      'process_superseded',
      `this process key belongs to a process of ${app} that was superseded by a newer one`,
    );
  if (verdict !== 'ok')
    throw new SvcError('forbidden', `the process key is not valid for application ${app}`);
  const connection = request.connection;
  if (connection === undefined || connection.principalId !== undefined) return;
  const presented = `${app}\0${key.trim()}`;
  const pinned = pinnedKeys.get(connection);
  if (pinned === undefined) pinnedKeys.set(connection, presented);
  else if (pinned !== presented)
    throw new SvcError(
      'forbidden',
      'this connection serves the task RPC of the process whose key it presented first; open another connection for another process',
    );
}
