// Where the agent sends a request, decided from the method and the raw path alone (pure; tested in
// routes.test.ts). The path is never normalised here: the daemon routes the raw path itself (a
// dot-segment can never walk out of a route), and the web UI files refuse anything but plain names.
import { isLoopbackAddress } from '@svc/platform/process-key';
import { PROCESS_KEY_HEADER } from '@svc/protocol';

export type Route =
  /** REST and WSS of the daemon: the whole API, its OpenAPI document, RFC 9728 metadata. */
  | { readonly to: 'daemon' }
  /** The built-in issuer (builtin mode), unchanged under /auth. */
  | { readonly to: 'issuer' }
  /** svc's MCP server (Streamable HTTP, packages/mcp), in the agent itself. */
  | { readonly to: 'mcp' }
  /** RFC 9728 metadata of the MCP endpoint (the API's, with `resource` naming /mcp). */
  | { readonly to: 'mcp-metadata' }
  /** A file of the web UI (packages/web/dist); `file` is relative, `index.html` for `/`. */
  | { readonly to: 'web'; readonly file: string }
  | { readonly to: 'refuse'; readonly status: 400 | 404 | 405; readonly message: string };

const DAEMON_EXACT = new Set(['/svc', '/openapi.json', '/.well-known/oauth-protected-resource']);
/** A file name segment of the web UI: no dot-segments, no hidden files, no encoded bytes. */
const WEB_SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

export function routeOf(method: string, rawPath: string): Route {
  const path = rawPath.split('?', 1)[0]!;
  if (path === '/mcp') return { to: 'mcp' };
  if (path === '/.well-known/oauth-protected-resource/mcp') return { to: 'mcp-metadata' };
  if (DAEMON_EXACT.has(path) || path.startsWith('/svc/')) return { to: 'daemon' };
  if (path === '/auth' || path.startsWith('/auth/')) return { to: 'issuer' };
  if (method !== 'GET' && method !== 'HEAD')
    return { to: 'refuse', status: 405, message: `${method} is not allowed on web UI files` };
  if (path === '/' || path === '') return { to: 'web', file: 'index.html' };
  const segments = path.slice(1).split('/');
  if (!path.startsWith('/') || !segments.every((segment) => WEB_SEGMENT.test(segment)))
    return { to: 'refuse', status: 404, message: `no web UI file at ${JSON.stringify(path.slice(0, 200))}` };
  return { to: 'web', file: segments.join('/') };
}

/** A Host header value the agent may echo into a URL: a name or an IP literal, and a port. */
const HOST = /^(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/** `https://<host>` as the client addressed the agent, or undefined for an unusable Host header. */
export function publicOrigin(host: string | undefined): string | undefined {
  return host !== undefined && HOST.test(host) ? `https://${host}` : undefined;
}

/**
 * The `Location` the browser should follow for a redirect of the built-in issuer. The issuer names
 * its own loopback origin (for example the 303 that resumes an authorization after the login form),
 * which a remote browser cannot reach: a location on `issuerOrigin` is moved to the agent's origin
 * as the client addressed it (`https://<host>`), path and query unchanged. Anything else (the
 * client's redirect_uri, another site) and an unusable Host are left as they are.
 */
export function issuerLocation(location: string, issuerOrigin: string, host: string | undefined): string {
  if (host === undefined || !HOST.test(host)) return location;
  let url: URL;
  try {
    url = new URL(location, `${issuerOrigin}/`);
  } catch {
    return location;
  }
  if (url.origin !== issuerOrigin) return location;
  return `https://${host}${url.pathname}${url.search}${url.hash}`;
}

/**
 * Whether the agent refuses to relay a request because it carries a process key from a client that
 * is not on this host (the key must never cross a network; svcd checks the relayed address too).
 */
export function refusesProcessKey(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  remoteAddress: string | undefined,
): boolean {
  return headers[PROCESS_KEY_HEADER] !== undefined && !isLoopbackAddress(remoteAddress ?? '');
}
