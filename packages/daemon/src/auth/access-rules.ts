// The access rules of the operation table: every operation declares exactly one rule (data, written
// to spec/access.json), and the dispatcher authorizes a request through that rule alone
// (api/dispatcher.ts). Decisions are pure functions of the principal, the validated input and what
// a small resolver knows about the application or subscription involved; they never do I/O
// themselves and never look at the transport. Handlers contain no authorization code.
import { SvcError, type Permission } from '@svc/protocol';
import {
  authenticateWorker,
  PROCESS_KEY_HEADER,
  type KeyVerdict,
  type WorkerRequest,
} from '../tasks/worker-auth.ts';
import { authorizeApp, type OthersAccess } from './authorizer.ts';
import type { Principal } from './principal.ts';

/** Where a per-application rule finds the application's name. */
export type AppLocator =
  /** The `{name}` path parameter. */
  | { readonly from: 'path' }
  /**
   * The `name` field of the JSON body, only when the body has no `command` (a run of a copy of a
   * registered application; the caller needs `needs` on it besides the rule's permission); a body
   * with `command` names a new transient application.
   */
  | { readonly from: 'body-copy'; readonly needs: Permission };

export type AccessRule =
  /** Anyone, no token. */
  | { readonly kind: 'public' }
  /** Any valid bearer token, also of a tombstoned principal (it may still ask who it is). */
  | { readonly kind: 'authenticated' }
  /**
   * An active principal holding `permission` and every permission of `also`. With `orProcessKeyOf`,
   * a request carrying `X-Svc-Process-Key` is decided as the process key of that application
   * instead (never falling back to the bearer).
   */
  | {
      readonly kind: 'permission';
      readonly permission: Permission;
      readonly also?: readonly Permission[];
      readonly orProcessKeyOf?: 'agent';
    }
  /**
   * An active principal allowed `permission` on one application (authorizeApp: app-manage-all, or
   * owner, or shared through the tens digit of the app's `permission`; app-view also by app-view-all; app-delete
   * by the owner without any permission). System applications exist only for svc-admin (404 for
   * everyone else); with `changes: true` they cannot be changed at all (409 system_app).
   */
  | {
      readonly kind: 'app';
      readonly permission: Permission;
      readonly app: AppLocator;
      /** `new`: a missing application is allowed and will be owned by the caller (registration). */
      readonly missing: 'not-found' | 'new';
      readonly changes: boolean;
      /** With this query parameter present, `permission` is needed on the app as well. */
      readonly withQuery?: { readonly name: string; readonly permission: Permission };
    }
  /**
   * An active principal holding `permission` that created the subscription named by the
   * `subscription_id` query parameter (of the `{name}` application when `app` is `path`).
   */
  | { readonly kind: 'subscription-owner'; readonly permission: Permission; readonly app: 'path' | 'any' }
  /**
   * No bearer: the `X-Svc-Process-Key` of the application's current process, on a direct loopback
   * connection (`path`: the `{name}` application; `agent`: the system application svc-agent).
   */
  | { readonly kind: 'process-key'; readonly app: 'path' | 'agent' };

/** What a rule may need to know of an application. */
export interface AppRecord {
  readonly owner: string | undefined;
  /** What other principals may do (the tens digit of the app's `permission`). */
  readonly others: OthersAccess;
  readonly system: boolean;
}

/** Read-only lookups the rules need; the daemon backs them with the supervisor and event hub. */
export interface AccessResolver {
  app(name: string): AppRecord | undefined;
  subscription(id: string): { readonly principalId: string; readonly app: string } | undefined;
  verifyProcessKey(app: string, key: string): KeyVerdict;
}

/** The validated input a rule looks at. */
export interface AccessInput {
  readonly params: Readonly<Record<string, string>>;
  readonly query: Readonly<Record<string, unknown>>;
  readonly body: unknown;
}

/** What an authorized request may see beyond the yes/no: handed to the handler. */
export interface Grant {
  /** The caller sees system applications (svc-admin); lists must leave them out otherwise. */
  readonly seesSystemApps: boolean;
  /** The application the rule resolved, when it is a per-application rule and the app exists. */
  readonly app?: AppRecord | undefined;
}

/** The system application whose process key reads GET /svc/metrics (apps/agent.yaml). */
export const METRICS_READER_APP = 'agent';

const NO_GRANT: Grant = { seesSystemApps: false };

export function seesSystemApps(principal: Principal): boolean {
  return principal.roles.includes('svc-admin');
}

/** Whether the principal sees the application at all (system apps: svc-admin only). */
export function seesApp(principal: Principal, app: AppRecord): boolean {
  return !app.system || seesSystemApps(principal);
}

/** Whether the principal may read the output (and STDOUT events) of the application. */
export function mayReadOutput(principal: Principal, app: Pick<AppRecord, 'owner' | 'others'>): boolean {
  try {
    authorizeApp(principal, 'app-output-view', app);
    return true;
  } catch {
    return false;
  }
}

function refuseTombstoned(principal: Principal): void {
  if (principal.status === 'tombstoned')
    throw new SvcError('principal_tombstoned', `principal ${principal.id} was deleted`);
}

function requirePermission(principal: Principal, permission: Permission, why = ''): void {
  if (!principal.permissions.has(permission))
    throw new SvcError('forbidden', `permission ${permission} required${why}`);
}

/**
 * Whether the request is decided by a bearer token: every rule but public and process-key, and a
 * permission rule open to a process key only when the request carries none.
 */
export function needsBearer(rule: AccessRule, headers: Readonly<Record<string, string>> = {}): boolean {
  if (rule.kind === 'permission' && rule.orProcessKeyOf !== undefined)
    return headers[PROCESS_KEY_HEADER] === undefined;
  return rule.kind !== 'public' && rule.kind !== 'process-key';
}

/** The application name the rule is about, or undefined when it is about none (or a new run). */
export function appNameOf(rule: AccessRule, input: AccessInput): string | undefined {
  if (rule.kind !== 'app') return undefined;
  if (rule.app.from === 'path') return input.params['name'];
  const body = input.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new SvcError('invalid_app', 'the run definition must be a JSON object');
  if ((body as Record<string, unknown>)['command'] !== undefined) return undefined;
  const name = (body as Record<string, unknown>)['name'];
  if (typeof name !== 'string') throw new SvcError('invalid_app', 'name: required when no command is given');
  return name;
}

/** Decide a request that needs no bearer (public, process-key). Throws SvcError to refuse. */
export function decideWithoutBearer(
  rule: AccessRule,
  request: WorkerRequest,
  input: AccessInput,
  resolver: AccessResolver,
): Grant {
  if (rule.kind === 'public') return NO_GRANT;
  if (rule.kind === 'permission' && rule.orProcessKeyOf !== undefined) {
    authenticateWorker(request, METRICS_READER_APP, (name, key) => resolver.verifyProcessKey(name, key));
    return NO_GRANT;
  }
  if (rule.kind !== 'process-key') throw new SvcError('unauthorized', 'a bearer token is required');
  if (rule.app === 'agent' && request.headers[PROCESS_KEY_HEADER] === undefined)
    throw new SvcError(
      'forbidden',
      "GET /svc/metrics is served to svc-agent only; scrape the agent's Prometheus exporter (SVC_METRICS_PORT)",
    );
  const app = rule.app === 'agent' ? METRICS_READER_APP : input.params['name']!;
  authenticateWorker(request, app, (name, key) => resolver.verifyProcessKey(name, key));
  return NO_GRANT;
}

/** Decide a request of an authenticated principal. Throws SvcError to refuse. */
export function decide(
  rule: AccessRule,
  principal: Principal,
  input: AccessInput,
  resolver: AccessResolver,
): Grant {
  const grant = { seesSystemApps: seesSystemApps(principal) };
  switch (rule.kind) {
    case 'public':
    case 'authenticated':
      return grant;
    case 'process-key':
      throw new SvcError('forbidden', 'this operation is for a managed process (X-Svc-Process-Key)');
    case 'permission':
      refuseTombstoned(principal);
      requirePermission(principal, rule.permission);
      for (const p of rule.also ?? []) requirePermission(principal, p, ` besides ${rule.permission}`);
      return grant;
    case 'subscription-owner': {
      refuseTombstoned(principal);
      requirePermission(principal, rule.permission);
      const id = input.query['subscription_id'];
      if (typeof id !== 'string' || id === '')
        throw new SvcError('invalid_query', 'subscription_id is required');
      const app = rule.app === 'path' ? input.params['name'] : undefined;
      const subscription = resolver.subscription(id);
      if (subscription === undefined || (app !== undefined && subscription.app !== app))
        throw new SvcError(
          'not_found',
          `no subscription ${id.slice(0, 64)}${app === undefined ? '' : ` of ${app}`}`,
        );
      if (subscription.principalId !== principal.id)
        throw new SvcError('forbidden', 'only the principal that created a subscription may remove it');
      return grant;
    }
    case 'app':
      return { ...grant, app: decideApp(rule, principal, input, resolver) };
  }
}

/**
 * The part of `decide` that the head of a request settles (method, path, query, bearer): all of it
 * for every rule but a run of a copy (`body-copy`), whose application is named in the body; of
 * that one, the tombstone and the run permission itself, which both of its forms need. The REST
 * transport calls it before reading a byte of the body (api/preflight.ts); the dispatcher still
 * decides the whole rule on the full request. Throws SvcError to refuse.
 */
export function decideFromHead(
  rule: AccessRule,
  principal: Principal,
  input: Omit<AccessInput, 'body'>,
  resolver: AccessResolver,
): void {
  if (rule.kind === 'app' && rule.app.from === 'body-copy') {
    refuseTombstoned(principal);
    requirePermission(principal, rule.permission);
    return;
  }
  decide(rule, principal, { ...input, body: undefined }, resolver);
}

function decideApp(
  rule: AccessRule & { kind: 'app' },
  principal: Principal,
  input: AccessInput,
  resolver: AccessResolver,
): AppRecord | undefined {
  refuseTombstoned(principal);
  const name = appNameOf(rule, input);
  if (name === undefined) {
    // A run of a new command: only the operation's own permission.
    requirePermission(principal, rule.permission);
    return undefined;
  }
  const found = resolver.app(name);
  const app = found !== undefined && seesApp(principal, found) ? found : undefined;
  if (app === undefined && (rule.missing === 'not-found' || found !== undefined))
    throw new SvcError('app_not_found', `no application named ${name}`);
  if (app?.system === true && rule.changes)
    throw new SvcError('system_app', `${name} is a system application and cannot be changed through the API`);
  // A new application will be owned by the caller.
  const subject = app ?? { owner: principal.id, others: 'deny' as const };
  if (rule.app.from === 'body-copy') {
    // Running a copy: the run permission itself, and `needs` on the application copied.
    requirePermission(principal, rule.permission);
    authorizeApp(principal, rule.app.needs, subject);
  } else authorizeApp(principal, rule.permission, subject);
  if (rule.withQuery !== undefined && input.query[rule.withQuery.name] !== undefined)
    authorizeApp(principal, rule.withQuery.permission, subject);
  return app;
}
