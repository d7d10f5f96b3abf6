// Splits a request target into path and query without normalising the path: "/a/../b" stays as
// it is, so a dot-segment can never walk a name out of its route (the router rejects it).
import { SvcError } from '@svc/protocol';

const MAX_QUERY_LENGTH = 16 * 1024;

export function splitTarget(target: string): { path: string; query: Record<string, string> } {
  const mark = target.indexOf('?');
  const path = mark === -1 ? target : target.slice(0, mark);
  const rawQuery = mark === -1 ? '' : target.slice(mark + 1);
  if (rawQuery.length > MAX_QUERY_LENGTH) throw new SvcError('invalid_query', 'query string is too long');
  const query: Record<string, string> = Object.create(null) as Record<string, string>;
  if (rawQuery.length > 0) {
    for (const [key, value] of new URLSearchParams(rawQuery)) {
      if (key in query) throw new SvcError('invalid_query', `query parameter "${key}" is repeated`);
      query[key] = value;
    }
  }
  return { path, query: { ...query } };
}
