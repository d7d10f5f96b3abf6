// Application registration, listing, control and output (docs: spec/contract.md §5, first rows).
// Authorization is each operation's `access` rule (auth/access-rules.ts); handlers do none.
import { SvcError } from '@svc/protocol';
import * as z from 'zod';
import { appNotFound } from '../../auth/access-rules.ts';
import { parseEventList } from '../../events/event-names.ts';
import { listingResponse } from '../app-listing.ts';
import { json, text } from '../responses.ts';
import { AppDefinition, AppList, AppRemoved, AppView, AppViewSubscribed, definitionBody } from '../schemas.ts';
import type { Services } from '../services.ts';
import { defineOperation, type Operation } from '../types.ts';
import { persistentConnection, subscriptionBody } from './events.ts';
import { durationParam, integerParam, patternParam } from './query.ts';

const MAX_LONG_POLL_MS = 300_000;
const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;

/** Adds `task_id` / `task_status` (the oldest outstanding task of the worker task loop) when there is one. */
function withTask<V extends { name?: unknown }>(app: V, services: Services): V {
  const current = typeof app.name === 'string' ? services.tasks.current(app.name) : undefined;
  return current === undefined ? app : { ...app, ...current };
}

export const appOperations: Operation<Services>[] = [
  defineOperation<Services>({
    id: 'listApplications',
    method: 'GET',
    path: '/svc/applications',
    access: { kind: 'permission', permission: 'app-view-all' },
    summary: 'List applications with their runtime fields (system applications for svc-admin only)',
    responses: [{ status: 200, description: 'the applications', json: AppList }],
    async handle({ services, grant }) {
      const views = services.supervisor
        .list()
        .filter((app) => grant.seesSystemApps || app['system'] !== true)
        .map((app) => withTask(app, services));
      return listingResponse(views, (name) => services.supervisor.definition(name));
    },
  }),
  defineOperation<Services>({
    id: 'getApplication',
    method: 'GET',
    path: '/svc/app/{name}',
    access: {
      kind: 'app',
      permission: 'app-view',
      app: { from: 'path' },
      missing: 'not-found',
      changes: false,
    },
    summary: 'One application (needs app-view for own or shared apps, app-view-all for any)',
    responses: [{ status: 200, description: 'the application', json: AppView }],
    async handle({ params, services }) {
      const app = services.supervisor.get(params['name']!);
      if (app === undefined) throw appNotFound(params['name']!);
      return json(withTask(app, services));
    },
  }),
  defineOperation<Services, z.ZodType<{ subscribe_events?: string | undefined }>, typeof AppDefinition>({
    id: 'registerApplication',
    method: 'PUT',
    path: '/svc/app/{name}',
    access: {
      kind: 'app',
      permission: 'app-reg',
      app: { from: 'path' },
      missing: 'new',
      changes: true,
      withQuery: { name: 'subscribe_events', permission: 'app-subscribe' },
    },
    summary: 'Register or replace an application',
    body: definitionBody(AppDefinition),
    query: z.object({
      subscribe_events: z.string().optional().meta({
        description:
          'comma-separated event names (empty = all) to subscribe this TCP/WSS connection to, atomically with the registration (405 over plain HTTP); the answer adds subscription_id',
      }),
    }),
    responses: [{ status: 200, description: 'the registered application', json: AppViewSubscribed }],
    async handle({ request, params, input, principal, grant, services }) {
      const name = params['name']!;
      const subscribeQuery = input.query.subscribe_events;
      const connection = subscribeQuery === undefined ? undefined : persistentConnection(request);
      const selection =
        subscribeQuery === undefined ? undefined : parseEventList(subscribeQuery, 'subscribe_events');
      const definition = input.body;
      if (definition.name !== undefined && definition.name !== name)
        throw new SvcError(
          'invalid_app',
          `name: ${JSON.stringify(definition.name)} does not match the path name "${name}"`,
        );
      const owner = grant.app?.owner ?? principal!.id;
      if (connection === undefined || selection === undefined)
        return json(await services.supervisor.register({ ...definition, name }, owner, principal!.id));
      // Atomic registration + subscription: the subscription exists before the process can start,
      // so even a process that exits in microseconds has its START, STDOUT and EXIT delivered.
      const subscription = services.events.subscribe(connection, principal!, name, selection);
      let app;
      try {
        app = await services.supervisor.register({ ...definition, name }, owner, principal!.id);
      } catch (error) {
        services.events.discard(subscription);
        throw error;
      }
      return json({ ...app, subscription_id: subscriptionBody(subscription).subscription_id });
    },
  }),
  defineOperation<Services>({
    id: 'deleteApplication',
    method: 'DELETE',
    path: '/svc/app/{name}',
    access: {
      kind: 'app',
      permission: 'app-delete',
      app: { from: 'path' },
      missing: 'not-found',
      changes: true,
    },
    summary: 'Remove an application (its owner needs no permission; others need app-delete)',
    responses: [{ status: 200, description: 'removed', json: AppRemoved }],
    async handle({ params, services }) {
      const name = params['name']!;
      await services.supervisor.remove(name);
      return json({ name, removed: true });
    },
  }),
  ...(['enable', 'disable'] as const).map((action) =>
    defineOperation<Services>({
      id: `${action}Application`,
      method: 'POST',
      path: `/svc/app/{name}/${action}`,
      access: {
        kind: 'app',
        permission: 'app-control',
        app: { from: 'path' },
        missing: 'not-found',
        // svc-admin may enable (start) a system application that is down; disabling one is refused.
        changes: action === 'disable',
      },
      summary: `${action === 'enable' ? 'Enable' : 'Disable'} an application`,
      responses: [{ status: 200, description: 'the application', json: AppView }],
      async handle({ params, services }) {
        const name = params['name']!;
        const supervisor = services.supervisor;
        return json(action === 'enable' ? await supervisor.enable(name) : await supervisor.disable(name));
      },
    }),
  ),
  defineOperation<Services>({
    id: 'getApplicationHealth',
    method: 'GET',
    path: '/svc/app/{name}/health',
    // Service registration's health URL (cluster services answer anyone); any other application
    // answers only a bearer that sees it, and every other name the 404 of a missing one.
    access: { kind: 'visible-app' },
    summary:
      'Health of an application: body 0 (healthy) or 1 (unhealthy); without a token only registered services answer',
    responses: [
      { status: 200, description: 'healthy: body "0"', media: 'text/plain' },
      { status: 503, description: 'unhealthy: body "1"', media: 'text/plain' },
    ],
    async handle({ params, services }) {
      const name = params['name']!;
      const health =
        services.supervisor.access(name) === undefined ? undefined : services.supervisor.health(name);
      if (health === undefined) throw appNotFound(name);
      return text(String(health), health === 0 ? 200 : 503);
    },
  }),
  defineOperation<Services, ReturnType<typeof outputQuery>>({
    id: 'getApplicationOutput',
    method: 'GET',
    path: '/svc/app/{name}/output',
    access: {
      kind: 'app',
      permission: 'app-output-view',
      app: { from: 'path' },
      missing: 'not-found',
      changes: false,
    },
    summary: 'Read captured output from a byte position',
    query: outputQuery(),
    responses: [
      {
        status: 200,
        description: 'output bytes from stdout_position',
        media: 'text/plain',
        headers: {
          'X-Output-Position': 'the offset to read from next',
          'X-Exit-Code': 'present once the process exited: its exit code',
          'X-Exited': '"true" when it exited with an unknown code (adopted process)',
          'X-Process-Uuid': 'the process the output belongs to',
        },
      },
    ],
    async handle({ params, input, services }) {
      const q = input.query;
      const chunk = await services.supervisor.readOutput(params['name']!, {
        position: q.stdout_position ?? 0,
        index: q.stdout_index ?? 0,
        maxSize: q.stdout_maxsize,
        processUuid: q.process_uuid,
        timeoutMs: q.timeout ?? 0,
      });
      const headers: Record<string, string> = { 'x-output-position': String(chunk.position) };
      if (chunk.exitCode !== undefined) headers['x-exit-code'] = String(chunk.exitCode);
      else if (chunk.exited) headers['x-exited'] = 'true'; // exited, exit code unknown (adopted)
      if (chunk.processUuid !== undefined) headers['x-process-uuid'] = chunk.processUuid;
      return text(chunk.output, 200, headers);
    },
  }),
];

function outputQuery() {
  return z.object({
    stdout_position: integerParam('stdout_position', 'byte offset to read from (default 0)', {
      min: 0,
      max: Number.MAX_SAFE_INTEGER,
    }),
    stdout_index: integerParam('stdout_index', '0 = current process, N = Nth previous output file', {
      min: 0,
      max: 1000,
    }),
    stdout_maxsize: integerParam('stdout_maxsize', 'maximum bytes to return', {
      min: 1,
      max: MAX_OUTPUT_BYTES,
    }),
    process_uuid: patternParam(
      'process_uuid',
      'read the output of this process only',
      /^[A-Za-z0-9-]{1,64}$/,
    ),
    timeout: durationParam('timeout', 'long poll: wait this long for new output or exit', MAX_LONG_POLL_MS),
  });
}
