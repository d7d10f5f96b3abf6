// RFC 8252 §7.3 for every client, the browser client svc-web included: a redirect URI on a loopback
// host is compared without its port. oidc-provider 9 does this only for native clients and only for
// `http:`; svc-web is a `web` client whose redirect URIs are `https:` (the agent's TLS origin), and
// the agent's port is whatever SVC_AGENT_PORT says or an SSH tunnel picked (issue 25 M6).
//
// The comparison is deliberately narrow, so that no parser difference between this check, the
// library and the browser can widen it:
//   - the presented URI must be in canonical form (`new URL(value).href === value`): no userinfo
//     tricks, no backslashes, no default port spelled out, no dot segments;
//   - its host is exactly `127.0.0.1`, `[::1]` or `localhost` (the IP literals RFC 8252 names, and
//     the name browsers resolve to loopback), and a registered URI names the same host;
//   - scheme, path and query equal that registered URI's; no fragment, no userinfo; only the port
//     differs.

const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** `value` without its port when it is a canonical loopback URI as described above, else undefined. */
function loopbackKey(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.href !== value) return undefined;
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (!LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  if (url.username !== '' || url.password !== '' || url.hash !== '') return undefined;
  return `${url.protocol}//${url.hostname}${url.pathname}${url.search}`;
}

/**
 * Whether `value` is allowed as a redirect URI given the `registered` ones: an exact match, or a
 * loopback URI equal to a registered loopback URI but for the port.
 */
export function redirectUriAllowed(value: string, registered: readonly string[]): boolean {
  if (registered.includes(value)) return true;
  const key = loopbackKey(value);
  if (key === undefined) return false;
  return registered.some((uri) => loopbackKey(canonical(uri)) === key);
}

/** A registered URI in canonical form (the configuration may spell `https://h:443/` or omit `/`). */
function canonical(uri: string): string {
  try {
    return new URL(uri).href;
  } catch {
    return uri;
  }
}

interface ClientRedirects {
  readonly redirectUris?: readonly string[];
  readonly postLogoutRedirectUris?: readonly string[];
  redirectUriAllowed: (this: ClientRedirects, value: string) => boolean;
  postLogoutRedirectUriAllowed: (this: ClientRedirects, value: string) => boolean;
}

/**
 * Extends the redirect checks of `provider`'s Client class (one class per Provider instance) with
 * the loopback comparison above, for authorization and for sign-out alike. The library's own check
 * (exact, or its native `http:` loopback rule) still runs first.
 */
export function allowLoopbackRedirectPorts(provider: object): void {
  const prototype = (provider as { Client: { prototype: ClientRedirects } }).Client.prototype;
  const library = {
    redirect: prototype.redirectUriAllowed,
    logout: prototype.postLogoutRedirectUriAllowed,
  };
  prototype.redirectUriAllowed = function (this: ClientRedirects, value: string): boolean {
    return library.redirect.call(this, value) || redirectUriAllowed(value, this.redirectUris ?? []);
  };
  prototype.postLogoutRedirectUriAllowed = function (this: ClientRedirects, value: string): boolean {
    return library.logout.call(this, value) || redirectUriAllowed(value, this.postLogoutRedirectUris ?? []);
  };
}

/**
 * oidc-provider's `clientBasedCORS` with the same loopback rule: a browser client (token endpoint
 * auth `none`) may call the token, revocation and userinfo endpoints from the origin of one of its
 * redirect URIs, a loopback one on any port. (The library's default compares origins exactly, so a
 * page reached through a tunnel would get its code but not its tokens.)
 */
export function clientOriginAllowed(
  origin: string,
  client: { readonly clientAuthMethod: string; readonly redirectUris?: readonly string[] },
  route: string | undefined,
): boolean {
  if (origin === 'null') return false;
  if (route !== 'userinfo' && client.clientAuthMethod !== 'none') return false;
  const registered = client.redirectUris ?? [];
  if (registered.some((uri) => URL.parse(uri)?.origin === origin)) return true;
  // An origin has no path: compare it as the root URI of that origin against the registered roots.
  const roots = registered.flatMap((uri) => {
    const url = URL.parse(uri);
    return url === null ? [] : [`${url.origin}/`];
  });
  return redirectUriAllowed(`${origin}/`, roots);
}
