// The invalid_app message: every problem as "<field path>: <problem>", joined by "; " (at most ten,
// then "; and N more"). Paths are written `a.b`, `a[0]`, `env["KEY"]` (the web form reads them).
import { SvcError } from '@svc/protocol';
import type * as z from 'zod';

const RECORD_PATHS = new Set(['env', 'secret_env', 'behavior.exit_code_actions']);

/** Render a path as `behavior.exit_code_actions["abc"]`, `env["A"]`, `depends_on[2]`, `daily_limitation.daily_end`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (
      RECORD_PATHS.has(out) ||
      typeof segment === 'symbol' ||
      !/^[A-Za-z_][A-Za-z0-9_]*$/.test(segment)
    ) {
      out += `[${JSON.stringify(String(segment))}]`;
    } else out += out === '' ? segment : `.${segment}`;
  }
  return out;
}

type Issue = z.core.$ZodIssue;

/** A union branch that does not apply to the input's form (the other branch says what is wrong). */
const OTHER_FORM = 'otherForm';

/** The custom issue of a union branch refusing an input of the other form. */
export function otherForm(message: string): z.core.$ZodRawIssue {
  return { code: 'custom', message, input: undefined, params: { [OTHER_FORM]: true } };
}

const isOtherForm = (issue: Issue): boolean => issue.code === 'custom' && issue.params?.[OTHER_FORM] === true;

/**
 * Report `key` of the object at `path` with `message` as an unrecognized key: zod validates the
 * rest of the input after such an issue (a pipe stops at any other), so that one answer still lists
 * every problem. For keys the field schemas do not see: an old field name with a problem, and
 * `__proto__`, which zod's records skip.
 */
export function reportKey(
  context: z.core.$RefinementCtx,
  key: string,
  message: string,
  path: readonly PropertyKey[] = [],
  mark: Record<string, true> = {},
): void {
  context.issues.push({
    code: 'unrecognized_keys',
    keys: [key],
    path: [...path],
    message,
    input: undefined,
    continue: true,
    ...mark,
  });
}

/** Each issue as "<path>: <problem>", in the order zod found them. */
export function issueMessages(issues: readonly Issue[], prefix: readonly PropertyKey[] = []): string[] {
  const messages: string[] = [];
  for (const issue of issues) {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) messages.push(`${formatPath([...path, key])}: ${issue.message}`);
    } else if (issue.code === 'invalid_key') {
      // A refused key of a record: its own problem, at the key.
      messages.push(`${formatPath(path)}: ${issue.issues[0]?.message ?? issue.message}`);
    } else if (issue.code === 'invalid_union' && issue.message === 'Invalid input') {
      // A union without a message of its own: the problems of the branch that applies to the input.
      const branch = issue.errors.find((errors) => !errors.some(isOtherForm)) ?? issue.errors[0] ?? [];
      messages.push(...issueMessages(branch, path));
    } else {
      const where = formatPath(path);
      messages.push(where === '' ? issue.message : `${where}: ${issue.message}`);
    }
  }
  return messages;
}

/** The text of an invalid_app error listing `messages`. */
export function problemsText(messages: readonly string[]): string {
  const shown = messages.slice(0, 10);
  const more = messages.length > shown.length ? `; and ${messages.length - shown.length} more` : '';
  return shown.join('; ') + more;
}

export function invalid(messages: readonly string[], prefix = ''): SvcError {
  return new SvcError('invalid_app', prefix + problemsText(messages));
}

/** The invalid_app message of a refused definition (the operations' body validator uses it). */
export function definitionProblems(issues: readonly Issue[]): string {
  return problemsText(issueMessages(issues));
}
