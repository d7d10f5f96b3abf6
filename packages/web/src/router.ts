// Hash routes (`#/app/web-1?tab=output`): the agent serves only index.html at `/`, so the route lives
// in the fragment, which never reaches a server and leaves the OAuth redirect URI (`/`) unchanged.
// Pure: `matchRoute` is unit-tested; `useRoute` follows `hashchange`.
import { useEffect, useState } from 'preact/hooks';

export interface RouteMatch {
  /** The matched pattern, e.g. `/app/:name`. */
  pattern: string;
  params: Record<string, string>;
  query: URLSearchParams;
}

/** Splits `#/a/b?x=1` into its path (`/a/b`) and query. */
export function parseHash(hash: string): { path: string; query: URLSearchParams } {
  const raw = hash.startsWith('#') ? hash.slice(1) : hash;
  const [path = '', query = ''] = raw.split('?', 2);
  return { path: path === '' ? '/' : path, query: new URLSearchParams(query) };
}

/** The first pattern matching `path`; `:name` segments capture one decoded segment. */
export function matchRoute(patterns: readonly string[], hash: string): RouteMatch | undefined {
  const { path, query } = parseHash(hash);
  const segments = path.split('/').filter((s) => s !== '');
  for (const pattern of patterns) {
    const parts = pattern.split('/').filter((s) => s !== '');
    if (parts.length !== segments.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < parts.length && ok; i++) {
      const part = parts[i]!;
      const segment = segments[i]!;
      if (part.startsWith(':')) {
        try {
          params[part.slice(1)] = decodeURIComponent(segment);
        } catch {
          ok = false;
        }
      } else ok = part === segment;
    }
    if (ok) return { pattern, params, query };
  }
  return undefined;
}

/** `#/app/<name>` etc.: builds a hash link with each parameter encoded. */
export function href(path: string, params: Record<string, string> = {}, query?: Record<string, string>): string {
  const filled = path.replace(/:([A-Za-z_]+)/g, (_, key: string) => encodeURIComponent(params[key] ?? ''));
  const search = query === undefined ? '' : new URLSearchParams(query).toString();
  return `#${filled}${search === '' ? '' : `?${search}`}`;
}

export function navigate(hash: string): void {
  window.location.hash = hash.startsWith('#') ? hash.slice(1) : hash;
}

export function useHash(): string {
  const [hash, setHash] = useState(window.location.hash);
  useEffect(() => {
    const update = () => setHash(window.location.hash);
    window.addEventListener('hashchange', update);
    return () => window.removeEventListener('hashchange', update);
  }, []);
  return hash;
}
