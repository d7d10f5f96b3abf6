// One-off runs: POST /svc/app/run (async) and /svc/app/syncrun (wait for the exit).
import { SvcError } from '@svc/protocol';
import { json, parseJsonBody, text } from '../responses.ts';
import type { Services } from '../services.ts';
import type { Operation, OperationContext } from '../types.ts';
import { requireAppPermission } from './apps.ts';
import { optionalDurationMs } from './query.ts';
import { DEFAULT_RUN_LIFECYCLE_SECONDS } from '../../supervisor/runs.ts';

function runInput(context: OperationContext<Services>): {
  input: unknown;
  timeoutSeconds: number;
  lifecycleSeconds: number;
} {
  const input = parseJsonBody(context.request.body);
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw new SvcError('invalid_app', 'the run definition must be a JSON object');
  const record = input as Record<string, unknown>;
  // `{name}` without a command runs a copy of an existing app. Its output is the original's output
  // (environment and secret_env included), so the caller needs the rights of reading that output:
  // app-output-view on an app it owns or that was shared with it, or with app-manage-all.
  if (record['command'] === undefined) {
    if (typeof record['name'] !== 'string')
      throw new SvcError('invalid_app', 'name: required when no command is given');
    requireAppPermission(context, record['name'], 'app-output-view');
  }
  // A new command without a name runs as "run-<id>".
  const named =
    record['command'] !== undefined && record['name'] === undefined ? { ...record, name: 'run' } : record;
  // No cap below the query maximum: App Mesh 3.0 clients send timeout=P2D, lifecycle=P2DT12H
  // (as seconds) by default; timers re-arm past setTimeout's 24.8-day limit.
  const timeoutMs = optionalDurationMs(context.request.query, 'timeout');
  const lifecycleMs = optionalDurationMs(context.request.query, 'lifecycle');
  return {
    input: named,
    timeoutSeconds: timeoutMs === undefined ? 0 : timeoutMs / 1000,
    // Without `lifecycle` the transient app is kept DEFAULT_RUN_LIFECYCLE_SECONDS after its exit, so
    // a client can still read the last output and the exit code (lifecycle=0 removes it at once).
    lifecycleSeconds: lifecycleMs === undefined ? DEFAULT_RUN_LIFECYCLE_SECONDS : lifecycleMs / 1000,
  };
}

export const runOperations: Operation<Services>[] = [
  {
    id: 'runApplication',
    method: 'POST',
    path: '/svc/app/run',
    access: { kind: 'permission', permission: 'app-run-async' },
    summary: 'Start a one-off run; returns the transient app name and process uuid',
    jsonBody: true,
    query: [
      { name: 'timeout', description: 'stop the run after this duration' },
      { name: 'lifecycle', description: 'remove the transient app this long after it exits' },
    ],
    async handle(context) {
      const { input, timeoutSeconds, lifecycleSeconds } = runInput(context);
      const result = await context.services.supervisor.run(
        input,
        { timeoutSeconds, lifecycleSeconds },
        context.principal!.id,
      );
      return json(result);
    },
  },
  {
    id: 'syncRunApplication',
    method: 'POST',
    path: '/svc/app/syncrun',
    access: { kind: 'permission', permission: 'app-run-sync' },
    summary: 'Run to completion; returns the output with X-Exit-Code',
    jsonBody: true,
    query: [{ name: 'timeout', description: 'stop the run after this duration (default 10 s)' }],
    async handle(context) {
      const { input, timeoutSeconds } = runInput(context);
      const result = await context.services.supervisor.syncRun(
        input,
        { timeoutSeconds: timeoutSeconds === 0 ? 10 : timeoutSeconds, lifecycleSeconds: 0 },
        context.principal!.id,
      );
      const headers: Record<string, string> = {};
      if (result.exitCode !== undefined) headers['x-exit-code'] = String(result.exitCode);
      return text(result.output, 200, headers);
    },
  },
];
