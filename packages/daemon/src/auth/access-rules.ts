// The access rules of the operation table: every operation declares exactly one rule (data, written
// to spec/access.json), and the dispatcher authorizes a request through that rule alone
// (api/dispatcher.ts). Decisions are pure functions of the principal, the validated input and what
// a small resolver knows about the application or subscription involved; they never do I/O
// themselves and never look at the transport. Handlers contain no authorization code.
import { PROCESS_KEY_HEADER, SvcError, type Permission } from '@svc/protocol';
import { authenticateWorker, type KeyVerdict, type WorkerRequest } from './process-key.ts';
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
   * An active principal allowed `permission` on one application, decided in three steps so that a
   * refusal never tells whether an application the caller cannot see exists:
   * 1. the permission itself, whatever the name (403): app-view is also held through app-view-all
   *    or app-manage-all; app-delete is not asked here (an owner deletes without it);
   * 2. the application must be one the caller sees (`seesApp`), else 404 app_not_found, word for
   *    word the answer for a name nobody registered (`missing: 'new'`: a missing name is the
   *    caller's new app, an unseen one 403 "not available");
   * 3. on a seen application, authorizeApp (app-manage-all, or owner, or shared through the tens
   *    digit of its `permission`; 403 otherwise). With `changes: true` a system application (seen
   *    by svc-admin only) cannot be changed at all (403 system_app).
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
   * `subscription_id` query parameter (of the `{name}` application when `app` is `path`). Another
   * principal's subscription is 404 not_found, as one that does not exist.
   */
  | { readonly kind: 'subscription-owner'; readonly permission: Permission; readonly app: 'path' | 'any' }
  /**
   * No bearer: the `X-Svc-Process-Key` of the application's current process, on a direct loopback
   * connection (`path`: the `{name}` application; `agent`: the system application svc-agent).
   */
  | { readonly kind: 'process-key'; readonly app: 'path' | 'agent' }
  /**
   * Anyone, with or without a bearer, about the `{name}` application if the caller sees it: a
   * registered service (a cluster app with a port on this node, whose name the registry publishes
   * with this URL) is seen by everyone; any other application only by a bearer that sees it
   * (`seesApp`). Every other name is 404 app_not_found, word for word the answer for a name nobody
   * registered, so names cannot be enumerated without a token. A bearer that is sent is verified
   * (401 when invalid).
   */
  | { readonly kind: 'visible-app' };

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
  /** Whether `name` is a service this node registered (cluster mode; its name is public). */
  service(name: string): boolean;
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

/**
 * Whether the principal sees the application at all: system applications only svc-admin; any other
 * its owner, everyone when the owner shared it (tens digit read or write), and holders of
 * app-view-all or app-manage-all. An application the principal does not see answers 404 exactly as
 * a missing one (CONTRACT §6; docs/security.md "What anonymous callers see; 403 and 404").
 */
export function seesApp(principal: Principal, app: AppRecord): boolean {
  if (app.system) return seesSystemApps(principal);
  if (app.owner !== undefined && app.owner === principal.id) return true;
  if (app.others !== 'deny') return true;
  return principal.permissions.has('app-view-all') || principal.permissions.has('app-manage-all');
}

/** The answer for an application the caller does not see, the same as for one that does not exist. */
export function appNotFound(name: string): SvcError {
  return new SvcError('app_not_found', `no application named ${name}`);
}

/** What a caller needs to use `permission` on any application at all (step 1 of an `app` rule). */
function requireAppPermission(principal: Principal, permission: Permission): void {
  // The owner deletes its own applications without app-delete (step 3 decides).
  if (permission === 'app-delete') return;
  if (
    permission === 'app-view' &&
    (principal.permissions.has('app-view-all') || principal.permissions.has('app-manage-all'))
  )
    return;
  requirePermission(principal, permission);
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
  if (rule.kind === 'visible-app') return headers['authorization'] !== undefined;
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

/**
 * The application whose process key decides a request without a bearer (`process-key`, and a
 * `permission` rule open to svc-agent's key); undefined for a rule no key decides.
 */
export function processKeyAppOf(
  rule: AccessRule,
  params: Readonly<Record<string, string>>,
): string | undefined {
  if (rule.kind === 'process-key') return rule.app === 'agent' ? METRICS_READER_APP : params['name'];
  if (rule.kind === 'permission' && rule.orProcessKeyOf !== undefined) return METRICS_READER_APP;
  return undefined;
}

/** Decide a request that needs no bearer (public, process-key). Throws SvcError to refuse. */
export function decideWithoutBearer(
  rule: AccessRule,
  request: WorkerRequest,
  input: AccessInput,
  resolver: AccessResolver,
): Grant {
  if (rule.kind === 'public') return NO_GRANT;
  if (rule.kind === 'visible-app') {
    const name = input.params['name']!;
    if (resolver.service(name)) return NO_GRANT;
    throw appNotFound(name);
  }
  const app = processKeyAppOf(rule, input.params);
  if (app === undefined) throw new SvcError('unauthorized', 'a bearer token is required');
  if (
    rule.kind === 'process-key' &&
    rule.app === 'agent' &&
    request.headers[PROCESS_KEY_HEADER] === undefined
  )
    throw new SvcError(
      'forbidden',
      "GET /svc/metrics is served to svc-agent only; scrape the agent's Prometheus exporter (SVC_METRICS_PORT)",
    );
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
      // Another principal's subscription is not the caller's to know of: the same 404.
      if (
        subscription === undefined ||
        subscription.principalId !== principal.id ||
        (app !== undefined && subscription.app !== app)
      )
        throw new SvcError(
          'not_found',
          `no subscription ${id.slice(0, 64)}${app === undefined ? '' : ` of ${app}`}`,
        );
      return grant;
    }
    case 'app':
      return { ...grant, app: decideApp(rule, principal, input, resolver) };
    case 'visible-app': {
      refuseTombstoned(principal);
      const name = input.params['name']!;
      const found = resolver.app(name);
      if (resolver.service(name) || (found !== undefined && seesApp(principal, found))) return grant;
      throw appNotFound(name);
    }
  }
}

/**
 * The part of `decide` that the head of a request settles (method, path, query, bearer): all of it
 * for every rule but a run of a copy (`body-copy`), whose application is named in the body; of
 * that one, the tombstone and the run permission itself, which both of its forms need. The
 * dispatcher calls it before a byte of the body is read, and for `body-copy` (undefined here)
 * `decide` once the body is read. Throws SvcError to refuse.
 */
export function decideFromHead(
  rule: AccessRule,
  principal: Principal,
  input: AccessInput & { readonly body: undefined },
  resolver: AccessResolver,
): Grant | undefined {
  if (rule.kind === 'app' && rule.app.from === 'body-copy') {
    refuseTombstoned(principal);
    requirePermission(principal, rule.permission);
    return undefined;
  }
  return decide(rule, principal, input, resolver);
}

function decideApp(
  rule: AccessRule & { kind: 'app' },
  principal: Principal,
  input: AccessInput,
  resolver: AccessResolver,
): AppRecord | undefined {
  refuseTombstoned(principal);
  // 1. The permission, whatever the name: a caller without it learns nothing of any name.
  if (rule.app.from === 'body-copy') requirePermission(principal, rule.permission);
  else requireAppPermission(principal, rule.permission);
  const name = appNameOf(rule, input);
  // A run of a new command: the operation's own permission is all.
  if (name === undefined) return undefined;
  // 2. An application the caller does not see is answered as a missing one.
  const found = resolver.app(name);
  const app = found !== undefined && seesApp(principal, found) ? found : undefined;
  if (app === undefined && rule.missing === 'not-found') throw appNotFound(name);
  if (app === undefined && found !== undefined)
    throw new SvcError('forbidden', `the application name ${name} is not available to this principal`);
  // 3. What the caller may do on it (a new application will be the caller's own).
  if (app?.system === true && rule.changes)
    throw new SvcError('system_app', `${name} is a system application and cannot be changed through the API`);
  const subject = app ?? { owner: principal.id, others: 'deny' as const };
  authorizeApp(principal, rule.app.from === 'body-copy' ? rule.app.needs : rule.permission, subject);
  if (rule.withQuery !== undefined && input.query[rule.withQuery.name] !== undefined)
    authorizeApp(principal, rule.withQuery.permission, subject);
  return app;
}
