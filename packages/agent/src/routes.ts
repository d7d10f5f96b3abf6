// Where the agent sends a request, decided from the method and the raw path alone (pure; tested in
// routes.test.ts). The path is never normalised here: the daemon routes the raw path itself (a
// dot-segment can never walk out of a route), and the web UI files refuse anything but plain names.

export type Route =
  /** REST and WSS of the daemon: the whole API, its OpenAPI document, RFC 9728 metadata. */
  | { readonly to: 'daemon' }
  /** The built-in issuer (builtin mode), unchanged under /auth. */
  | { readonly to: 'issuer' }
  /** A file of the web UI (packages/web/dist); `file` is relative, `index.html` for `/`. */
  | { readonly to: 'web'; readonly file: string }
  | { readonly to: 'refuse'; readonly status: 400 | 404 | 405; readonly message: string };

const DAEMON_EXACT = new Set(['/svc', '/openapi.json', '/.well-known/oauth-protected-resource']);
/** A file name segment of the web UI: no dot-segments, no hidden files, no encoded bytes. */
const WEB_SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

export function routeOf(method: string, rawPath: string): Route {
  const path = rawPath.split('?', 1)[0]!;
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
