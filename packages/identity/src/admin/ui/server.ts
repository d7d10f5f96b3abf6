// The administration UI (spec "Administration UI"): HTTP on a Unix socket of mode 0600
// (SVC_AUTH_ADMIN_LISTEN `unix:/path`, the program's default: only the owner and root can connect)
// or, by explicit choice, on a loopback TCP port (which any local user can reach), no
// authentication of its own (access by SSH port forwarding), a client
// of the administrative gRPC API. Server-rendered pages for users ("Passwords"), OAuth clients,
// sessions and MFA, and a small JSON API for the helper script (add-user / delete-user).
//
// Request checks, in order:
//   1. Host must name a loopback host (127.x, ::1, localhost; any port, for SSH forwarding): a
//      DNS-rebinding page reaching the listener under another name is refused (421).
//   2. State-changing requests (POST/DELETE) must be same-origin: an Origin (else Referer) header
//      naming another origin is refused (403). Forms must also carry one of the two, and the
//      per-process CSRF token (403 otherwise). The JSON API needs Content-Type application/json
//      on POST, which a cross-origin page cannot send without a CORS preflight (never answered).
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { isAdminRpcError, type AdminClient } from '../grpc-client.ts';
import { formatListen, isLoopbackHost, parseAdminUiListen } from '../listen.ts';
import type { AdminUiListen } from '../listen.ts';
import { listenUnixSocket } from './unix-socket.ts';
import {
  clientsPage,
  escapeHtml,
  mfaPage,
  page,
  passwordsPage,
  sessionsPage,
  type PageMessages,
} from './html.ts';

export interface AdminUiOptions {
  /** The gRPC client (with the UI's client certificate). */
  client: AdminClient;
  /** `unix:/path` or a loopback `host:port` (SVC_AUTH_ADMIN_LISTEN); a non-loopback address is refused. */
  listen: string;
  /** Unexpected errors (never with request bodies). */
  onError?: ((error: unknown) => void) | undefined;
}

export interface AdminUi {
  /** Empty on a Unix socket. */
  readonly host: string;
  /** 0 on a Unix socket. */
  readonly port: number;
  /** The Unix socket's path, when listening on one. */
  readonly socketPath: string | undefined;
  /** `http://host:port`, or `unix:<path>` */
  readonly url: string;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 16 * 1024;

class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** HTTP status and error code of a gRPC failure. */
function fromRpc(error: unknown): HttpError {
  if (!isAdminRpcError(error)) return new HttpError(500, 'internal', 'internal error');
  const message = error.details;
  switch (error.code) {
    case grpc.status.INVALID_ARGUMENT:
      return new HttpError(400, 'invalid_argument', message);
    case grpc.status.NOT_FOUND:
      return new HttpError(404, 'not_found', message);
    case grpc.status.ALREADY_EXISTS:
      return new HttpError(409, 'already_exists', message);
    case grpc.status.FAILED_PRECONDITION:
      return new HttpError(409, 'failed_precondition', message);
    case grpc.status.UNAVAILABLE:
    case grpc.status.DEADLINE_EXCEEDED:
      return new HttpError(
        502,
        'grpc_unavailable',
        'the administrative gRPC API (svc-identity) is unreachable',
      );
    default:
      return new HttpError(500, 'internal', 'the administrative gRPC API failed');
  }
}

function hostnameOf(hostHeader: string): string | undefined {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:]+))(?::\d{1,5})?$/.exec(hostHeader);
  return match === null ? undefined : (match[1] ?? match[2])!.toLowerCase();
}

function isLoopbackHostHeader(hostHeader: string | undefined): boolean {
  if (hostHeader === undefined) return false;
  const name = hostnameOf(hostHeader);
  return name !== undefined && (name === 'localhost' || isLoopbackHost(name));
}

/** The origin a same-origin request carries: `http://<Host header>`. */
function sameOrigin(request: IncomingMessage, value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' && url.host === new URL(`http://${request.headers.host}`).host;
  } catch {
    return false;
  }
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES)
      throw new HttpError(413, 'too_large', `request body above ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function send(
  response: ServerResponse,
  status: number,
  contentType: string,
  body: string,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'same-origin',
    // No script, no external asset: inline style only, forms post to this origin.
    'content-security-policy':
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ...headers,
  });
  response.end(body);
}

const json = (response: ServerResponse, status: number, body: unknown): void =>
  send(response, status, 'application/json; charset=utf-8', JSON.stringify(body) + '\n');
const html = (response: ServerResponse, status: number, body: string): void =>
  send(response, status, 'text/html; charset=utf-8', body);
const redirect = (response: ServerResponse, location: string): void =>
  send(response, 303, 'text/plain; charset=utf-8', '', { location });

/** The JSON view of a user for the helper script: principal id = user_id (CONTRACT §8). */
const userJson = (user: { user_id: string; email: string; username: string }) => ({
  user_id: user.user_id,
  email: user.email,
  username: user.username,
  principal_id: user.user_id,
});

function decodeEmail(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, 'invalid_argument', 'malformed percent-encoding');
  }
}

export async function startAdminUi(options: AdminUiOptions): Promise<AdminUi> {
  const address: AdminUiListen = parseAdminUiListen(options.listen, 'SVC_AUTH_ADMIN_LISTEN');
  const client = options.client;
  const csrfToken = randomBytes(32).toString('base64url');
  const csrfValid = (value: string | undefined): boolean =>
    value !== undefined &&
    value.length === csrfToken.length &&
    timingSafeEqual(Buffer.from(value), Buffer.from(csrfToken));

  const render = async (
    path: string,
    messages: PageMessages,
    status = 200,
    email = '',
  ): Promise<[number, string]> => {
    switch (path) {
      case '/passwords':
        return [
          status,
          passwordsPage((await client.Passwords.ListUsers({})).users, csrfToken, messages, email),
        ];
      case '/clients':
        return [status, clientsPage((await client.Clients.ListClients({})).clients, csrfToken, messages)];
      case '/sessions':
        return [status, sessionsPage((await client.Sessions.ListSessions({})).sessions, csrfToken, messages)];
      case '/mfa':
        return [status, mfaPage((await client.Passwords.ListUsers({})).users, csrfToken, messages)];
      default:
        return [404, page(path, 'Not found', '<p>No such page.</p>')];
    }
  };

  /** A form post: run `action`, then redirect to `back` with a notice, or re-render it with the error. */
  const formAction = async (
    response: ServerResponse,
    back: string,
    action: () => Promise<string>,
    keepEmail = '',
  ): Promise<void> => {
    let notice: string;
    try {
      notice = await action();
    } catch (error) {
      const failure = error instanceof HttpError ? error : fromRpc(error);
      if (failure.code === 'grpc_unavailable' || failure.status === 500) throw failure;
      const [status, body] = await render(back, { error: failure.message }, failure.status, keepEmail);
      html(response, status, body);
      return;
    }
    redirect(response, `${back}?notice=${encodeURIComponent(notice)}`);
  };

  const handleForm = async (
    request: IncomingMessage,
    response: ServerResponse,
    path: string,
  ): Promise<void> => {
    const origin = request.headers.origin ?? request.headers.referer;
    if (origin === undefined || !sameOrigin(request, origin))
      throw new HttpError(403, 'cross_origin', 'cross-origin form submission refused');
    const contentType = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (contentType !== 'application/x-www-form-urlencoded')
      throw new HttpError(415, 'unsupported_media_type', 'forms must be application/x-www-form-urlencoded');
    const form = new URLSearchParams(await readBody(request));
    if (!csrfValid(form.get('csrf') ?? undefined))
      throw new HttpError(403, 'csrf', 'missing or invalid CSRF token; reload the page');
    const field = (name: string): string => form.get(name) ?? '';
    switch (path) {
      case '/passwords/create': {
        const email = field('email').trim();
        return formAction(
          response,
          '/passwords',
          async () => {
            const user = await client.Passwords.CreateUser({ email, password: field('password') });
            return `Created ${user.email} (user id ${user.user_id}); the user has no role yet.`;
          },
          email,
        );
      }
      case '/passwords/delete':
        return formAction(response, '/passwords', async () => {
          const user = await client.Passwords.DeleteUser({ email: field('email') });
          return `Deleted ${user.email} (user id ${user.user_id}).`;
        });
      case '/passwords/set':
        return formAction(response, '/passwords', async () => {
          const user = await client.Passwords.SetPassword({
            email: field('email'),
            password: field('password'),
          });
          return `New password set for ${user.email}; their sessions were ended.`;
        });
      case '/passwords/unlock':
        return formAction(response, '/passwords', async () => {
          const result = await client.Passwords.UnlockUser({ email: field('email') });
          return `Sign-in waits of ${result.email} ended (${result.locks_cleared} in force).`;
        });
      case '/clients/regenerate':
        return formAction(response, '/clients', async () => {
          const info = await client.Clients.RegenerateAutomationSecret({});
          return `A new secret for ${info.client_id} was written to work/auth/secrets/automation-client.`;
        });
      case '/sessions/revoke':
        return formAction(response, '/sessions', async () => {
          await client.Sessions.RevokeSession({ id: field('id') });
          return `Session ${field('id')} revoked.`;
        });
      case '/mfa/set': {
        if (field('enabled') !== 'true')
          return formAction(response, '/mfa', async () => {
            const state = await client.Mfa.SetMfa({ email: field('email'), enabled: false });
            return `MFA off for ${state.email}.`;
          });
        // Turning MFA on enrols a TOTP secret, rendered here once (never in a redirect URL).
        let state;
        try {
          state = await client.Mfa.SetMfa({ email: field('email'), enabled: true });
        } catch (error) {
          const failure = error instanceof HttpError ? error : fromRpc(error);
          if (failure.code === 'grpc_unavailable' || failure.status === 500) throw failure;
          const [status, body] = await render('/mfa', { error: failure.message }, failure.status);
          html(response, status, body);
          return;
        }
        const users = (await client.Passwords.ListUsers({})).users;
        html(
          response,
          200,
          mfaPage(
            users,
            csrfToken,
            { notice: `MFA on for ${state.email}.` },
            {
              email: state.email,
              secret: state.secret,
              uri: state.otpauth_uri,
            },
          ),
        );
        return;
      }
      default:
        throw new HttpError(404, 'not_found', 'no such action');
    }
  };

  const handleApi = async (
    request: IncomingMessage,
    response: ServerResponse,
    path: string,
  ): Promise<void> => {
    const method = request.method ?? 'GET';
    const origin = request.headers.origin;
    if (method !== 'GET' && origin !== undefined && !sameOrigin(request, origin))
      throw new HttpError(403, 'cross_origin', 'cross-origin request refused');
    if (path === '/api/users' && method === 'GET') {
      json(response, 200, { users: (await client.Passwords.ListUsers({})).users.map(userJson) });
      return;
    }
    if (path === '/api/users' && method === 'POST') {
      const contentType = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      if (contentType !== 'application/json')
        throw new HttpError(415, 'unsupported_media_type', 'Content-Type must be application/json');
      let body: unknown;
      try {
        body = JSON.parse(await readBody(request));
      } catch (error) {
        if (error instanceof HttpError) throw error;
        throw new HttpError(400, 'invalid_json', 'the body is not JSON');
      }
      const { email, password } = (body ?? {}) as { email?: unknown; password?: unknown };
      if (typeof email !== 'string' || typeof password !== 'string')
        throw new HttpError(400, 'invalid_argument', 'expected {"email": string, "password": string}');
      json(response, 201, userJson(await client.Passwords.CreateUser({ email, password })));
      return;
    }
    const unlock = /^\/api\/users\/([^/]+)\/unlock$/.exec(path);
    if (unlock !== null) {
      if (method !== 'POST') throw new HttpError(405, 'method_not_allowed', 'no such endpoint');
      json(response, 200, await client.Passwords.UnlockUser({ email: decodeEmail(unlock[1]!) }));
      return;
    }
    const one = /^\/api\/users\/([^/]+)$/.exec(path);
    if (one !== null && method === 'DELETE') {
      json(response, 200, userJson(await client.Passwords.DeleteUser({ email: decodeEmail(one[1]!) })));
      return;
    }
    throw new HttpError(
      path === '/api/users' || one !== null ? 405 : 404,
      path === '/api/users' || one !== null ? 'method_not_allowed' : 'not_found',
      'no such endpoint',
    );
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const path = url.pathname;
    const method = request.method ?? 'GET';
    const isApi = path === '/api' || path.startsWith('/api/');
    try {
      if (!isLoopbackHostHeader(request.headers.host))
        throw new HttpError(421, 'misdirected', 'the administration UI answers only to loopback host names');
      if (path === '/healthz' && method === 'GET') {
        send(response, 200, 'text/plain; charset=utf-8', 'ok\n');
        return;
      }
      if (isApi) {
        await handleApi(request, response, path);
        return;
      }
      if (method === 'POST') {
        await handleForm(request, response, path);
        return;
      }
      if (method !== 'GET' && method !== 'HEAD')
        throw new HttpError(405, 'method_not_allowed', 'method not allowed');
      if (path === '/') {
        redirect(response, '/passwords');
        return;
      }
      const notice = url.searchParams.get('notice') ?? undefined;
      const [status, body] = await render(path, { notice });
      html(response, status, body);
    } catch (caught) {
      const error = caught instanceof HttpError ? caught : fromRpc(caught);
      if (!(caught instanceof HttpError) && !isAdminRpcError(caught)) options.onError?.(caught);
      if (response.headersSent) {
        response.destroy();
        return;
      }
      if (isApi) json(response, error.status, { error: error.code, message: error.message });
      else
        html(
          response,
          error.status,
          page(path, 'Error', `<p class="error" role="alert">${escapeHtml(error.message)}</p>`),
        );
      // An unread request body would be answered with a reset; end the exchange cleanly.
      if (!request.complete) request.resume();
    }
  };

  const server: Server = createServer((request, response) => void handle(request, response));
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const close = (): Promise<void> =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    });
  if (address.kind === 'unix') {
    await listenUnixSocket(server, address.path);
    return { host: '', port: 0, socketPath: address.path, url: `unix:${address.path}`, close };
  }
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
  const host = address.host;
  return {
    host,
    port,
    socketPath: undefined,
    url: `http://${formatListen({ host, port })}`,
    close,
  };
}
