// Application registration, listing, control and output (CONTRACT §5, first rows).
import { SvcError, type Permission } from '@svc/protocol';
import type { Principal } from '../../auth/principal.ts';
import { authorizeApp } from '../../auth/authorizer.ts';
import { parseEventList } from '../../events/event-names.ts';
import { json, parseJsonBody, text } from '../responses.ts';
import type { Services } from '../services.ts';
import type { Operation, OperationContext } from '../types.ts';
import { persistentConnection, subscriptionBody } from './events.ts';
import { optionalDurationMs, optionalInteger } from './query.ts';

type Ctx = OperationContext<Services>;

const MAX_LONG_POLL_MS = 300_000;
const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;

export function isAdmin(principal: Principal): boolean {
  return principal.roles.includes('svc-admin');
}

/** The app's access record, or 404. System apps are invisible to everyone but svc-admin. */
export function appAccess(context: Ctx, name: string) {
  const access = context.services.supervisor.access(name);
  if (access === undefined || (access.system && !isAdmin(context.principal!)))
    throw new SvcError('app_not_found', `no application named ${name}`);
  return access;
}

/** Checks `permission` on one app: app-manage-all, or owner, or shared with the caller. */
export function requireAppPermission(context: Ctx, name: string, permission: Permission) {
  const access = appAccess(context, name);
  authorizeApp(context.principal!, permission, { owner: access.owner, others: access.others });
  return access;
}

function refuseSystem(access: { system: boolean }, name: string): void {
  if (access.system)
    throw new SvcError('system_app', `${name} is a system application and cannot be changed through the API`);
}

export const appOperations: Operation<Services>[] = [
  {
    id: 'listApplications',
    method: 'GET',
    path: '/svc/applications',
    access: { kind: 'permission', permission: 'app-view-all' },
    summary: 'List applications with their runtime fields',
    async handle(context) {
      const admin = isAdmin(context.principal!);
      const apps = context.services.supervisor.list().filter((app) => admin || app['system'] !== true);
      return json(apps);
    },
  },
  {
    id: 'getApplication',
    method: 'GET',
    path: '/svc/app/{name}',
    access: { kind: 'authenticated' },
    summary: 'One application (needs app-view for own or shared apps, app-view-all for any)',
    async handle(context) {
      const name = context.params['name']!;
      const access = appAccess(context, name);
      const principal = context.principal!;
      // Refused first, like every other operation (authorizer.ts): the code says why.
      if (principal.status === 'tombstoned')
        throw new SvcError('principal_tombstoned', 'the principal record was deleted');
      if (!principal.permissions.has('app-view-all')) {
        if (!principal.permissions.has('app-view'))
          throw new SvcError('forbidden', 'permission app-view is required');
        authorizeApp(principal, 'app-view', { owner: access.owner, others: access.others });
      }
      const app = context.services.supervisor.get(name);
      if (app === undefined) throw new SvcError('app_not_found', `no application named ${name}`);
      return json(app);
    },
  },
  {
    id: 'registerApplication',
    method: 'PUT',
    path: '/svc/app/{name}',
    access: { kind: 'permission', permission: 'app-reg' },
    summary: 'Register or replace an application',
    jsonBody: true,
    query: [
      {
        name: 'subscribe_events',
        description:
          'comma-separated event names (empty = all) to subscribe this TCP/WSS connection to, atomically with the registration (405 over plain HTTP); the answer adds subscription_id',
      },
    ],
    async handle(context) {
      const name = context.params['name']!;
      const subscribeQuery = context.request.query['subscribe_events'];
      const connection = subscribeQuery === undefined ? undefined : persistentConnection(context.request);
      const selection =
        subscribeQuery === undefined ? undefined : parseEventList(subscribeQuery, 'subscribe_events');
      const body = parseJsonBody(context.request.body);
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw new SvcError('invalid_app', 'the application definition must be a JSON object');
      const definition = body as Record<string, unknown>;
      if (definition['name'] !== undefined && definition['name'] !== name)
        throw new SvcError(
          'invalid_app',
          `name: ${JSON.stringify(definition['name']).slice(0, 130)} does not match the path name "${name}"`,
        );
      const existing = context.services.supervisor.access(name);
      let owner = context.principal!.id;
      if (existing !== undefined) {
        refuseSystem(existing, name);
        authorizeApp(context.principal!, 'app-reg', { owner: existing.owner, others: existing.others });
        owner = existing.owner ?? owner;
      }
      if (connection === undefined || selection === undefined) {
        return json(await context.services.supervisor.register({ ...definition, name }, owner));
      }
      // Atomic registration + subscription: the subscription exists before the process can start,
      // so even a process that exits in microseconds has its START, STDOUT and EXIT delivered.
      const principal = context.principal!;
      authorizeApp(principal, 'app-subscribe', { owner, others: existing?.others ?? 'deny' });
      const subscription = context.services.events.subscribe(connection, principal, name, selection);
      let app;
      try {
        app = await context.services.supervisor.register({ ...definition, name }, owner);
      } catch (error) {
        context.services.events.discard(subscription);
        throw error;
      }
      return json({ ...app, subscription_id: subscriptionBody(subscription).subscription_id });
    },
  },
  {
    id: 'deleteApplication',
    method: 'DELETE',
    path: '/svc/app/{name}',
    access: { kind: 'authenticated' },
    summary: 'Remove an application (its owner needs no permission; others need app-delete)',
    async handle(context) {
      const name = context.params['name']!;
      const access = appAccess(context, name);
      refuseSystem(access, name);
      const principal = context.principal!;
      if (principal.status === 'tombstoned')
        throw new SvcError('principal_tombstoned', 'the principal record was deleted');
      if (access.owner !== principal.id) {
        if (!principal.permissions.has('app-delete'))
          throw new SvcError('forbidden', 'permission app-delete is required');
        authorizeApp(principal, 'app-delete', { owner: access.owner, others: access.others });
      }
      await context.services.supervisor.remove(name);
      return json({ name, removed: true });
    },
  },
  ...(['enable', 'disable'] as const).map((action): Operation<Services> => ({
    id: `${action}Application`,
    method: 'POST',
    path: `/svc/app/{name}/${action}`,
    access: { kind: 'permission', permission: 'app-control' },
    summary: `${action === 'enable' ? 'Enable' : 'Disable'} an application`,
    async handle(context) {
      const name = context.params['name']!;
      const access = requireAppPermission(context, name, 'app-control');
      // enable starts a system app that is down (docs/decisions.md); disable stays refused.
      if (action === 'disable') refuseSystem(access, name);
      const supervisor = context.services.supervisor;
      return json(action === 'enable' ? await supervisor.enable(name) : await supervisor.disable(name));
    },
  })),
  {
    id: 'getApplicationHealth',
    method: 'GET',
    path: '/svc/app/{name}/health',
    access: { kind: 'public' },
    summary: 'Health of an application: body 0 (healthy) or 1 (unhealthy)',
    async handle(context) {
      const name = context.params['name']!;
      const access = context.services.supervisor.access(name);
      const health = access === undefined ? undefined : context.services.supervisor.health(name);
      if (health === undefined) throw new SvcError('app_not_found', `no application named ${name}`);
      return text(String(health), health === 0 ? 200 : 503);
    },
  },
  {
    id: 'getApplicationOutput',
    method: 'GET',
    path: '/svc/app/{name}/output',
    access: { kind: 'permission', permission: 'app-output-view' },
    summary: 'Read captured output from a byte position',
    query: [
      { name: 'stdout_position', description: 'byte offset to read from (default 0)' },
      { name: 'stdout_index', description: '0 = current process, N = Nth previous output file' },
      { name: 'stdout_maxsize', description: 'maximum bytes to return' },
      { name: 'process_uuid', description: 'read the output of this process only' },
      {
        name: 'timeout',
        description: 'long poll: seconds or ISO 8601 duration to wait for new output or exit',
      },
    ],
    async handle(context) {
      const name = context.params['name']!;
      requireAppPermission(context, name, 'app-output-view');
      const q = context.request.query;
      const processUuid = q['process_uuid'];
      if (processUuid !== undefined && !/^[A-Za-z0-9-]{1,64}$/.test(processUuid))
        throw new SvcError('invalid_query', 'process_uuid: not a process uuid');
      const timeoutMs = optionalDurationMs(q, 'timeout') ?? 0;
      if (timeoutMs > MAX_LONG_POLL_MS)
        throw new SvcError('invalid_query', `timeout: at most ${MAX_LONG_POLL_MS / 1000} seconds`);
      const chunk = await context.services.supervisor.readOutput(name, {
        position: optionalInteger(q, 'stdout_position', { min: 0, max: Number.MAX_SAFE_INTEGER }) ?? 0,
        index: optionalInteger(q, 'stdout_index', { min: 0, max: 1000 }) ?? 0,
        maxSize: optionalInteger(q, 'stdout_maxsize', { min: 1, max: MAX_OUTPUT_BYTES }),
        processUuid: processUuid === '' ? undefined : processUuid,
        timeoutMs,
      });
      const headers: Record<string, string> = { 'x-output-position': String(chunk.position) };
      if (chunk.exitCode !== undefined) headers['x-exit-code'] = String(chunk.exitCode);
      else if (chunk.exited) headers['x-exited'] = 'true'; // exited, exit code unknown (adopted)
      if (chunk.processUuid !== undefined) headers['x-process-uuid'] = chunk.processUuid;
      return text(chunk.output, 200, headers);
    },
  },
];
