// One-off runs: POST /svc/app/run (async) and /svc/app/syncrun (wait for the exit).
import * as z from 'zod';
import { DEFAULT_RUN_LIFECYCLE_SECONDS } from '../../supervisor/runs.ts';
import { json, text } from '../responses.ts';
import { RunDefinition, RunStarted, definitionBody } from '../schemas.ts';
import type { Services } from '../services.ts';
import { defineOperation, type Operation } from '../types.ts';
import { durationParam } from './query.ts';

/** A new command without a name runs as "run-<id>"; `{name}` alone runs a copy of that app. */
function named(input: z.output<typeof RunDefinition>): Record<string, unknown> {
  return 'command' in input && input.name === undefined ? { ...input, name: 'run' } : input;
}

const asyncQuery = z.object({
  // No cap below the parser's maximum: App Mesh 3.0 clients send timeout=P2D and lifecycle=P2DT12H
  // (as seconds) by default; timers re-arm past setTimeout's 24.8-day limit.
  timeout: durationParam('timeout', 'stop the run after this duration'),
  lifecycle: durationParam('lifecycle', 'remove the transient app this long after it exits'),
});
const syncQuery = z.object({
  timeout: durationParam('timeout', 'stop the run after this duration (default 10 s)'),
  // Validated like the async run's (the same clients send it); a synchronous run is removed at once.
  lifecycle: durationParam(
    'lifecycle',
    'accepted for symmetry with /svc/app/run; the app is removed at exit',
  ),
});

export const runOperations: Operation<Services>[] = [
  defineOperation<Services, typeof asyncQuery, typeof RunDefinition>({
    id: 'runApplication',
    method: 'POST',
    path: '/svc/app/run',
    access: {
      kind: 'app',
      permission: 'app-run-async',
      // A copy's output is the original's (environment and secret_env included): it needs the
      // rights of reading that output.
      app: { from: 'body-copy', needs: 'app-output-view' },
      missing: 'not-found',
      changes: false,
    },
    summary: 'Start a one-off run; returns the transient app name and process uuid',
    body: definitionBody(RunDefinition),
    query: asyncQuery,
    responses: [{ status: 200, description: 'the run started', json: RunStarted }],
    async handle({ input, principal, services }) {
      const { timeout, lifecycle } = input.query;
      const result = await services.supervisor.run(
        named(input.body),
        {
          timeoutSeconds: timeout === undefined ? 0 : timeout / 1000,
          // Without `lifecycle` the transient app is kept DEFAULT_RUN_LIFECYCLE_SECONDS after its exit,
          // so a client can still read the last output and the exit code (lifecycle=0 removes it).
          lifecycleSeconds: lifecycle === undefined ? DEFAULT_RUN_LIFECYCLE_SECONDS : lifecycle / 1000,
        },
        principal!.id,
      );
      return json(result);
    },
  }),
  defineOperation<Services, typeof syncQuery, typeof RunDefinition>({
    id: 'syncRunApplication',
    method: 'POST',
    path: '/svc/app/syncrun',
    access: {
      kind: 'app',
      permission: 'app-run-sync',
      // A copy's output is the original's (environment and secret_env included): it needs the
      // rights of reading that output.
      app: { from: 'body-copy', needs: 'app-output-view' },
      missing: 'not-found',
      changes: false,
    },
    summary: 'Run to completion; returns the output with X-Exit-Code',
    body: definitionBody(RunDefinition),
    query: syncQuery,
    responses: [
      {
        status: 200,
        description: 'the whole output',
        media: 'text/plain',
        headers: { 'X-Exit-Code': 'exit code of the run (absent when it was stopped by the timeout)' },
      },
    ],
    async handle({ input, principal, services }) {
      const timeout = input.query.timeout;
      const result = await services.supervisor.syncRun(
        named(input.body),
        { timeoutSeconds: timeout === undefined || timeout === 0 ? 10 : timeout / 1000, lifecycleSeconds: 0 },
        principal!.id,
      );
      const headers: Record<string, string> = {};
      if (result.exitCode !== undefined) headers['x-exit-code'] = String(result.exitCode);
      return text(result.output, 200, headers);
    },
  }),
];
