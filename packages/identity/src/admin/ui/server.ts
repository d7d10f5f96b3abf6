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
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { isAdminRpcError, type AdminClient } from '../grpc-client.ts';
import { formatListen, parseAdminUiListen } from '../listen.ts';
import type { AdminUiListen } from '../listen.ts';
import { handleApi } from './api.ts';
import { escapeHtml, page } from './html.ts';
import { HttpError, fromRpc, html, isLoopbackHostHeader, json, redirect, send } from './http.ts';
import { AdminPages } from './pages.ts';
import { listenUnixSocket } from './unix-socket.ts';

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

export async function startAdminUi(options: AdminUiOptions): Promise<AdminUi> {
  const address: AdminUiListen = parseAdminUiListen(options.listen, 'SVC_AUTH_ADMIN_LISTEN');
  const client = options.client;
  const pages = new AdminPages(client);

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
        await handleApi(client, request, response, path);
        return;
      }
      if (method === 'POST') {
        await pages.handleForm(request, response, path);
        return;
      }
      if (method !== 'GET' && method !== 'HEAD')
        throw new HttpError(405, 'method_not_allowed', 'method not allowed');
      if (path === '/') {
        redirect(response, '/passwords');
        return;
      }
      const notice = url.searchParams.get('notice') ?? undefined;
      const [status, body] = await pages.render(path, { notice });
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
