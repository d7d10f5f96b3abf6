// Listener addresses of the administration transports (spec "Modes and configuration", "Ports"):
// `SVC_AUTH_GRPC_LISTEN` (default 127.0.0.1:5557) and `SVC_AUTH_ADMIN_LISTEN` (default: the Unix
// socket `work/auth/admin-ui.sock`; `host:port` on loopback only by explicit choice). A TCP
// address must stay on loopback: a non-loopback address is refused, never bound.
import { isIP } from 'node:net';
import { join } from 'node:path';

export const DEFAULT_GRPC_LISTEN = '127.0.0.1:5557';
/** The conventional TCP address of the administration UI, used only when set explicitly. */
export const TCP_ADMIN_UI_LISTEN = '127.0.0.1:6064';

/**
 * The administration UI's default listener in every setup (checkout, package, container): a Unix
 * socket of mode 0600 in `work/auth/` (work/ is kept 0700 by svcd), so that only svc's own user and
 * root can connect; they reach it from elsewhere with `ssh -L 6064:<path> host` (issue 25 C2).
 */
export function defaultAdminUiListen(workDir: string): string {
  return `${UNIX_LISTEN_PREFIX}${join(workDir, 'auth', 'admin-ui.sock')}`;
}

export interface ListenAddress {
  /** A literal loopback IP: 127.0.0.0/8 or ::1 (`localhost` is read as 127.0.0.1). */
  readonly host: string;
  /** 0 binds an ephemeral port. */
  readonly port: number;
}

export class ListenAddressError extends Error {
  override readonly name = 'ListenAddressError';
}

export function isLoopbackHost(host: string): boolean {
  if (isIP(host) === 4) return host.split('.')[0] === '127';
  if (isIP(host) === 6) return host === '::1' || host === '0:0:0:0:0:0:0:1';
  return false;
}

/**
 * Parse `host:port` (`[::1]:port` for IPv6). `variable` names the setting in error messages.
 * Throws ListenAddressError for a malformed value or a host that is not loopback.
 */
export function parseLoopbackListen(value: string, variable: string): ListenAddress {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(value.trim());
  if (match === null)
    throw new ListenAddressError(`${variable}: expected host:port, got ${JSON.stringify(value)}`);
  let host = (match[1] ?? match[2])!.toLowerCase();
  if (host === 'localhost') host = '127.0.0.1';
  const port = Number(match[3]);
  if (port > 65535) throw new ListenAddressError(`${variable}: port ${port} is out of range`);
  if (!isLoopbackHost(host))
    throw new ListenAddressError(
      `${variable}: ${host} is not a loopback address; the listener must stay on loopback`,
    );
  return { host, port };
}

/** `host:port` with IPv6 hosts bracketed (also the gRPC target form). */
export function formatListen(address: ListenAddress): string {
  return `${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}`;
}

/** `SVC_AUTH_ADMIN_LISTEN` for the UI: a loopback `host:port`, or `unix:<absolute path>`. */
export type AdminUiListen =
  ({ readonly kind: 'tcp' } & ListenAddress) | { readonly kind: 'unix'; readonly path: string };

export const UNIX_LISTEN_PREFIX = 'unix:';
/** sun_path holds 108 bytes including the terminating NUL. */
const MAX_SOCKET_PATH_BYTES = 107;

/**
 * The administration UI's listener. `unix:/path` (the default, defaultAdminUiListen) is a Unix
 * socket of mode 0600, reachable by its owner and root only (`ssh -L 6064:/path` forwards to it); a
 * TCP listener is reachable by every local user, who can then act as an administrator (the UI has
 * no login of its own): unsafe on a shared host (docs/decisions.md).
 */
export function parseAdminUiListen(value: string, variable: string): AdminUiListen {
  const trimmed = value.trim();
  if (!trimmed.startsWith(UNIX_LISTEN_PREFIX))
    return { kind: 'tcp', ...parseLoopbackListen(value, variable) };
  const path = trimmed.slice(UNIX_LISTEN_PREFIX.length);
  if (!path.startsWith('/'))
    throw new ListenAddressError(`${variable}: expected unix:<absolute path>, got ${JSON.stringify(value)}`);
  if (/[\0\r\n]/.test(path) || path.endsWith('/'))
    throw new ListenAddressError(`${variable}: the socket path must name a file on one line`);
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES)
    throw new ListenAddressError(
      `${variable}: the socket path is longer than ${MAX_SOCKET_PATH_BYTES} bytes`,
    );
  return { kind: 'unix', path };
}
