// Matches a method and path against the operation table. Path segments are percent-decoded one by
// one after splitting, so an encoded "/" inside a principal id never creates a new segment.
import { NAME_PATTERN, SvcError } from '@svc/protocol';
import type { Operation } from './types.ts';

const MAX_PATH_LENGTH = 4096;

interface CompiledRoute<S> {
  operation: Operation<S>;
  segments: readonly ({ literal: string } | { param: string })[];
  /** Indexes of the literal segments, compared before any parameter is decoded. */
  literals: readonly number[];
}

export interface RouteMatch<S> {
  operation: Operation<S>;
  params: Record<string, string>;
}

/**
 * Parameters validated against NAME_PATTERN (`{name}`, `{key}`, `{role}`). `id` (principal ids) is
 * length-checked only.
 */
const NAME_PARAMS = new Set(['name', 'key', 'role']);

export class Router<S> {
  /** Routes by segment count, each list in table order (the first match wins). */
  readonly #bySize = new Map<number, CompiledRoute<S>[]>();

  constructor(operations: readonly Operation<S>[]) {
    for (const operation of operations) {
      const segments = operation.path
        .split('/')
        .slice(1)
        .map((part) => (part.startsWith('{') ? { param: part.slice(1, -1) } : { literal: part }));
      const literals = segments.flatMap((segment, i) => ('literal' in segment ? [i] : []));
      const routes = this.#bySize.get(segments.length) ?? [];
      routes.push({ operation, segments, literals });
      this.#bySize.set(segments.length, routes);
    }
  }

  match(method: string, path: string): RouteMatch<S> {
    if (path.length > MAX_PATH_LENGTH) throw new SvcError('bad_request', 'request path is too long');
    if (!path.startsWith('/')) throw new SvcError('bad_request', 'request path must start with "/"');
    const parts = path.split('/').slice(1);
    let pathMatched = false;
    for (const route of this.#bySize.get(parts.length) ?? []) {
      const params = matchSegments(route, parts);
      if (params === undefined) continue;
      pathMatched = true;
      if (route.operation.method !== method) continue;
      validateParams(params);
      return { operation: route.operation, params };
    }
    if (pathMatched) throw new SvcError('method_not_allowed', `method ${method} is not allowed on ${path}`);
    throw new SvcError('route_not_found', `no operation at ${path}`);
  }
}

/** The route's parameters when `parts` (as many as the route's segments) match it. */
function matchSegments(
  route: CompiledRoute<unknown>,
  parts: readonly string[],
): Record<string, string> | undefined {
  const { segments, literals } = route;
  for (const i of literals) if ((segments[i] as { literal: string }).literal !== parts[i]) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if ('literal' in segment) continue;
    const part = parts[i]!;
    if (part.length === 0) return undefined;
    let decoded: string;
    try {
      decoded = decodeURIComponent(part);
    } catch (cause) {
      throw new SvcError('bad_request', `path segment is not valid percent-encoding`, { cause });
    }
    params[segment.param] = decoded;
  }
  return params;
}

function validateParams(params: Record<string, string>): void {
  for (const [key, value] of Object.entries(params)) {
    if (NAME_PARAMS.has(key)) {
      if (!NAME_PATTERN.test(value) || value === '.' || value === '..') {
        throw new SvcError(
          'invalid_name',
          `${key} must match ^[A-Za-z0-9_.-]{1,128}$ and not be "." or ".."`,
        );
      }
    } else if (value.length > 512 || hasControlCharacter(value)) {
      throw new SvcError('invalid_name', `${key} is too long or contains control characters`);
    }
  }
}

function hasControlCharacter(value: string): boolean {
  for (let i = 0; i < value.length; i++)
    if (value.charCodeAt(i) < 0x20 || value.charCodeAt(i) === 0x7f) return true;
  return false;
}
