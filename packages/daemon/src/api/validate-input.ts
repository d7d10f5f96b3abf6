// Validation of an operation's query and body against its declared schemas (api/types.ts). Every
// refusal is a 400 whose message names the parameter or field; nothing of the input is echoed
// beyond a short prefix.
import { SvcError } from '@svc/protocol';
import type * as z from 'zod';
import type { BodySpec } from './types.ts';

function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  const parts = issues.slice(0, 10).map((issue) => {
    const where = issue.path.map(String).join('.');
    return where === '' ? issue.message : `${where}: ${issue.message}`;
  });
  const more = issues.length > parts.length ? `; and ${issues.length - parts.length} more` : '';
  return parts.join('; ') + more;
}

/** The query as the schema produces it; without a schema, an empty object. */
export function validateQuery(
  schema: z.ZodType | undefined,
  query: Readonly<Record<string, string>>,
): Record<string, unknown> {
  if (schema === undefined) return {};
  const result = schema.safeParse(query);
  if (!result.success) throw new SvcError('invalid_query', describeIssues(result.error.issues));
  return result.data as Record<string, unknown>;
}

/** A parsed JSON body validated by the operation's schema. */
export function validateBody(spec: BodySpec & { kind: 'json' }, json: unknown): unknown {
  const result = spec.schema.safeParse(json);
  if (!result.success)
    throw new SvcError(
      spec.errorCode ?? 'bad_request',
      (spec.describeIssues ?? describeIssues)(result.error.issues),
    );
  return result.data;
}
