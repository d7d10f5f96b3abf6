// The access rules as pure decisions: a principal, the validated input and a fake resolver.
import { describe, expect, it } from 'vitest';
import { BUILTIN_ROLES, SvcError, type Permission } from '@svc/protocol';
import { operations } from '../api/operations/index.ts';
import {
  decide,
  decideWithoutBearer,
  mayReadOutput,
  needsBearer,
  seesApp,
  type AccessInput,
  type AccessResolver,
  type AccessRule,
  type AppRecord,
} from './access-rules.ts';
import type { Principal } from './principal.ts';

function principal(
  id: string,
  permissions: readonly Permission[],
  roles: string[] = [],
  status: Principal['status'] = 'active',
): Principal {
  return { id, roles, status, permissions: new Set(permissions), expiresAt: 0 };
}

const admin = principal('admin', BUILTIN_ROLES['svc-admin'], ['svc-admin']);
const maintenance = principal('maint', BUILTIN_ROLES['svc-maintenance'], ['svc-maintenance']);
const viewer = principal('viewer', BUILTIN_ROLES['svc-viewer'], ['svc-viewer']);
const dev = principal('dev', [
  'app-view',
  'app-control',
  'app-output-view',
  'app-reg',
  'app-subscribe',
  'app-run-async',
]);
const ghost = principal('ghost', BUILTIN_ROLES['svc-admin'], ['svc-admin'], 'tombstoned');
const bare = principal('bare', []);

const APPS: Record<string, AppRecord> = {
  alices: { owner: 'alice', others: 'deny', system: false },
  devs: { owner: 'dev', others: 'deny', system: false },
  shared: { owner: 'alice', others: 'write', system: false },
  readable: { owner: 'alice', others: 'read', system: false },
  agent: { owner: undefined, others: 'deny', system: true },
  /** A cluster app with a port, registered as a service of this node. */
  web: { owner: 'alice', others: 'deny', system: false },
};

const resolver: AccessResolver = {
  app: (name) => APPS[name],
  service: (name) => name === 'web',
  subscription: (id) =>
    id === 'sub-dev'
      ? { principalId: 'dev', app: 'devs' }
      : id === 'sub-admin'
        ? { principalId: 'admin', app: '*' }
        : undefined,
  verifyProcessKey: (app, key) =>
    app === 'devs' && key === 'good' ? 'ok' : key === 'old' ? 'superseded' : 'unknown',
};

function input(
  params: Record<string, string> = {},
  query: Record<string, string> = {},
  body?: unknown,
): AccessInput {
  return { params, query, body };
}

/** The refusal `fn` throws, or undefined when it allows. */
function caught(fn: () => unknown): SvcError | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    if (!(error instanceof SvcError)) throw error;
    return error;
  }
}

const outcome = (fn: () => unknown): string => caught(fn)?.code ?? 'allow';
const message = (fn: () => unknown): string => caught(fn)?.message ?? 'allowed';

const onApp = (permission: Permission, extra: Partial<AccessRule & { kind: 'app' }> = {}): AccessRule => ({
  kind: 'app',
  permission,
  app: { from: 'path' },
  missing: 'not-found',
  changes: false,
  ...extra,
});

describe('permission rules', () => {
  const rule: AccessRule = { kind: 'permission', permission: 'app-subscribe', also: ['app-view-all'] };
  it('needs every permission of the rule', () => {
    expect(outcome(() => decide(rule, admin, input(), resolver))).toBe('allow');
    expect(outcome(() => decide(rule, dev, input(), resolver))).toBe('forbidden');
    expect(outcome(() => decide(rule, bare, input(), resolver))).toBe('forbidden');
  });
  it('refuses a tombstoned principal first, whatever it holds', () => {
    expect(outcome(() => decide(rule, ghost, input(), resolver))).toBe('principal_tombstoned');
  });
  it('authenticated lets a tombstoned principal ask who it is', () => {
    expect(outcome(() => decide({ kind: 'authenticated' }, ghost, input(), resolver))).toBe('allow');
  });
  it('grants system-app sight to svc-admin only', () => {
    expect(decide({ kind: 'authenticated' }, admin, input(), resolver).seesSystemApps).toBe(true);
    expect(decide({ kind: 'authenticated' }, maintenance, input(), resolver).seesSystemApps).toBe(false);
  });
});

describe('per-application rules', () => {
  it('ownership and sharing without app-manage-all', () => {
    const rule = onApp('app-control');
    expect(outcome(() => decide(rule, dev, input({ name: 'devs' }), resolver))).toBe('allow');
    expect(outcome(() => decide(rule, dev, input({ name: 'shared' }), resolver))).toBe('allow');
    // dev does not see alice's private app: the answer of a missing one
    expect(outcome(() => decide(rule, dev, input({ name: 'alices' }), resolver))).toBe('app_not_found');
    expect(outcome(() => decide(rule, maintenance, input({ name: 'alices' }), resolver))).toBe('allow');
    expect(outcome(() => decide(rule, viewer, input({ name: 'alices' }), resolver))).toBe('forbidden');
  });
  it('the permission comes first: without it every name is 403, existing or not', () => {
    for (const name of ['devs', 'alices', 'shared', 'agent', 'nope'])
      for (const permission of ['app-view', 'app-control', 'app-output-view', 'app-run-task'] as const)
        expect(
          outcome(() => decide(onApp(permission), bare, input({ name }), resolver)),
          name,
        ).toBe('forbidden');
    expect(outcome(() => decide(onApp('app-control'), viewer, input({ name: 'nope' }), resolver))).toBe(
      'forbidden',
    );
  });
  it('a read share lets others view and read output, not control', () => {
    expect(outcome(() => decide(onApp('app-view'), dev, input({ name: 'readable' }), resolver))).toBe(
      'allow',
    );
    expect(outcome(() => decide(onApp('app-output-view'), dev, input({ name: 'readable' }), resolver))).toBe(
      'allow',
    );
    expect(outcome(() => decide(onApp('app-control'), dev, input({ name: 'readable' }), resolver))).toBe(
      'forbidden',
    );
  });
  it('app-view-all views any app; app-view only mine', () => {
    const rule = onApp('app-view');
    expect(outcome(() => decide(rule, viewer, input({ name: 'alices' }), resolver))).toBe('allow');
    expect(outcome(() => decide(rule, maintenance, input({ name: 'alices' }), resolver))).toBe('allow');
    expect(outcome(() => decide(rule, dev, input({ name: 'alices' }), resolver))).toBe('app_not_found');
    expect(outcome(() => decide(rule, bare, input({ name: 'devs' }), resolver))).toBe('forbidden');
  });
  it('system apps are 404 for everyone but svc-admin, and cannot be changed even by svc-admin', () => {
    expect(outcome(() => decide(onApp('app-view'), viewer, input({ name: 'agent' }), resolver))).toBe(
      'app_not_found',
    );
    expect(outcome(() => decide(onApp('app-view'), admin, input({ name: 'agent' }), resolver))).toBe('allow');
    const change = onApp('app-control', { changes: true });
    expect(outcome(() => decide(change, admin, input({ name: 'agent' }), resolver))).toBe('system_app');
    expect(outcome(() => decide(change, maintenance, input({ name: 'agent' }), resolver))).toBe(
      'app_not_found',
    );
  });
  it('a missing app is 404, or allowed and owned by the caller for registration', () => {
    expect(outcome(() => decide(onApp('app-reg'), dev, input({ name: 'nope' }), resolver))).toBe(
      'app_not_found',
    );
    const register = onApp('app-reg', { missing: 'new', changes: true });
    expect(outcome(() => decide(register, dev, input({ name: 'nope' }), resolver))).toBe('allow');
    expect(outcome(() => decide(register, viewer, input({ name: 'nope' }), resolver))).toBe('forbidden');
    // replacing someone else's app needs app-manage-all
    expect(outcome(() => decide(register, dev, input({ name: 'alices' }), resolver))).toBe('forbidden');
    expect(outcome(() => decide(register, admin, input({ name: 'alices' }), resolver))).toBe('allow');
    // a name taken by an app the caller cannot see is never "new": 403, saying nothing of its owner
    expect(outcome(() => decide(register, dev, input({ name: 'agent' }), resolver))).toBe('forbidden');
    expect(message(() => decide(register, dev, input({ name: 'agent' }), resolver))).toBe(
      'the application name agent is not available to this principal',
    );
    expect(message(() => decide(register, dev, input({ name: 'alices' }), resolver))).toBe(
      'the application name alices is not available to this principal',
    );
  });
  it('the owner deletes without app-delete; others need it and app-manage-all', () => {
    const rule = onApp('app-delete', { changes: true });
    expect(outcome(() => decide(rule, dev, input({ name: 'devs' }), resolver))).toBe('allow');
    expect(outcome(() => decide(rule, dev, input({ name: 'shared' }), resolver))).toBe('forbidden');
    expect(outcome(() => decide(rule, maintenance, input({ name: 'alices' }), resolver))).toBe('forbidden');
    expect(outcome(() => decide(rule, viewer, input({ name: 'alices' }), resolver))).toBe('forbidden');
    expect(outcome(() => decide(rule, admin, input({ name: 'alices' }), resolver))).toBe('allow');
    // whom the app is not visible to: the answer of a missing app
    expect(outcome(() => decide(rule, dev, input({ name: 'alices' }), resolver))).toBe('app_not_found');
    expect(outcome(() => decide(rule, maintenance, input({ name: 'agent' }), resolver))).toBe(
      'app_not_found',
    );
    expect(outcome(() => decide(rule, bare, input({ name: 'nope' }), resolver))).toBe('app_not_found');
  });
  it('withQuery adds a permission only when the parameter is present', () => {
    const rule = onApp('app-reg', {
      missing: 'new',
      withQuery: { name: 'subscribe_events', permission: 'app-subscribe' },
    });
    const noSubscribe = principal('ns', ['app-reg']);
    expect(outcome(() => decide(rule, noSubscribe, input({ name: 'x' }), resolver))).toBe('allow');
    expect(
      outcome(() => decide(rule, noSubscribe, input({ name: 'x' }, { subscribe_events: '' }), resolver)),
    ).toBe('forbidden');
  });
  it('a run of a copy needs the run permission and sight of the copied app; a new command only the run permission', () => {
    const rule: AccessRule = {
      kind: 'app',
      permission: 'app-run-async',
      app: { from: 'body-copy', needs: 'app-view' },
      missing: 'not-found',
      changes: false,
    };
    expect(outcome(() => decide(rule, dev, input({}, {}, { command: 'true' }), resolver))).toBe('allow');
    expect(outcome(() => decide(rule, dev, input({}, {}, { name: 'devs' }), resolver))).toBe('allow');
    expect(outcome(() => decide(rule, dev, input({}, {}, { name: 'alices' }), resolver))).toBe(
      'app_not_found',
    );
    expect(outcome(() => decide(rule, viewer, input({}, {}, { command: 'true' }), resolver))).toBe(
      'forbidden',
    );
    expect(outcome(() => decide(rule, dev, input({}, {}, { name: 'nope' }), resolver))).toBe('app_not_found');
    // without the run permission, the name is not looked at
    for (const name of ['devs', 'alices', 'nope'])
      expect(outcome(() => decide(rule, viewer, input({}, {}, { name }), resolver))).toBe('forbidden');
    for (const hostile of [null, [], 'x', 7, { name: 42 }, {}])
      expect(outcome(() => decide(rule, dev, input({}, {}, hostile), resolver))).toBe('invalid_app');
  });
});

describe('an application the caller does not see is answered as a missing one', () => {
  const callers = { admin, maintenance, viewer, dev, bare, ghost };
  // Every per-application operation of the table, for every caller: the same code and the same
  // message (but for the name) for an app it cannot see as for a name nobody registered.
  for (const op of operations) {
    const rule = op.access;
    if (rule.kind !== 'app' || rule.missing === 'new') continue;
    it(`${op.id}`, () => {
      const ask = (who: Principal, name: string): string => {
        const at = rule.app.from === 'path' ? input({ name }) : input({}, {}, { name });
        return `${outcome(() => decide(rule, who, at, resolver))}: ${message(() => decide(rule, who, at, resolver)).replace(name, '<name>')}`;
      };
      for (const [label, who] of Object.entries(callers)) {
        const missing = ask(who, 'nope');
        for (const name of Object.keys(APPS))
          if (!seesApp(who, APPS[name]!)) expect(ask(who, name), `${label} ${name}`).toBe(missing);
      }
    });
  }
});

describe('visible-app rules (the health endpoint)', () => {
  const rule: AccessRule = { kind: 'visible-app' };
  const anonymous = { query: {}, headers: {}, remoteAddress: '10.0.0.9' };
  it('without a bearer only a registered service is seen; every other name is a missing one', () => {
    expect(outcome(() => decideWithoutBearer(rule, anonymous, input({ name: 'web' }), resolver))).toBe(
      'allow',
    );
    for (const name of ['alices', 'shared', 'agent', 'nope']) {
      expect(outcome(() => decideWithoutBearer(rule, anonymous, input({ name }), resolver))).toBe(
        'app_not_found',
      );
      expect(message(() => decideWithoutBearer(rule, anonymous, input({ name }), resolver))).toBe(
        `no application named ${name}`,
      );
    }
  });
  it('with a bearer, the apps the principal sees, and the services', () => {
    const at = (name: string) => input({ name });
    expect(outcome(() => decide(rule, dev, at('devs'), resolver))).toBe('allow');
    expect(outcome(() => decide(rule, dev, at('readable'), resolver))).toBe('allow');
    expect(outcome(() => decide(rule, bare, at('web'), resolver))).toBe('allow');
    expect(outcome(() => decide(rule, dev, at('alices'), resolver))).toBe('app_not_found');
    expect(outcome(() => decide(rule, viewer, at('alices'), resolver))).toBe('allow');
    expect(outcome(() => decide(rule, viewer, at('agent'), resolver))).toBe('app_not_found');
    expect(outcome(() => decide(rule, admin, at('agent'), resolver))).toBe('allow');
    expect(outcome(() => decide(rule, ghost, at('devs'), resolver))).toBe('principal_tombstoned');
  });
  it('a bearer is verified when one is sent, and only then', () => {
    expect(needsBearer(rule, {})).toBe(false);
    expect(needsBearer(rule, { authorization: 'Bearer x' })).toBe(true);
  });
});

describe('subscription-owner rules', () => {
  const rule: AccessRule = { kind: 'subscription-owner', permission: 'app-subscribe', app: 'path' };
  it('only the creator removes a subscription, of the app named in the path', () => {
    expect(
      outcome(() => decide(rule, dev, input({ name: 'devs' }, { subscription_id: 'sub-dev' }), resolver)),
    ).toBe('allow');
    // another principal's subscription: as if there were none
    expect(
      outcome(() => decide(rule, admin, input({ name: 'devs' }, { subscription_id: 'sub-dev' }), resolver)),
    ).toBe('not_found');
    expect(
      outcome(() => decide(rule, dev, input({ name: 'alices' }, { subscription_id: 'sub-dev' }), resolver)),
    ).toBe('not_found');
    expect(outcome(() => decide(rule, dev, input({ name: 'devs' }, {}), resolver))).toBe('invalid_query');
    expect(
      outcome(() => decide(rule, bare, input({ name: 'devs' }, { subscription_id: 'sub-dev' }), resolver)),
    ).toBe('forbidden');
  });
  it('any app: the id alone', () => {
    const any: AccessRule = { kind: 'subscription-owner', permission: 'app-subscribe', app: 'any' };
    expect(outcome(() => decide(any, admin, input({}, { subscription_id: 'sub-admin' }), resolver))).toBe(
      'allow',
    );
  });
});

describe('process-key rules', () => {
  const request = (key: string | undefined, remoteAddress = '127.0.0.1') => ({
    query: {},
    headers: key === undefined ? {} : { 'x-svc-process-key': key },
    remoteAddress,
  });
  const rule: AccessRule = { kind: 'process-key', app: 'path' };
  it('accepts the current key of the named app on loopback only', () => {
    const at = input({ name: 'devs' });
    expect(outcome(() => decideWithoutBearer(rule, request('good'), at, resolver))).toBe('allow');
    expect(outcome(() => decideWithoutBearer(rule, request('good', '10.0.0.1'), at, resolver))).toBe(
      'process_key_transport',
    );
    expect(outcome(() => decideWithoutBearer(rule, request('old'), at, resolver))).toBe('process_superseded');
    expect(outcome(() => decideWithoutBearer(rule, request('bad'), at, resolver))).toBe('forbidden');
    expect(outcome(() => decideWithoutBearer(rule, request(undefined), at, resolver))).toBe('bad_request');
  });
  it('a bearer never satisfies a process-key rule', () => {
    expect(outcome(() => decide(rule, admin, input({ name: 'devs' }), resolver))).toBe('forbidden');
  });
  it('a permission rule open to a process key: the key decides when present, the bearer otherwise', () => {
    const rule: AccessRule = {
      kind: 'permission',
      permission: 'host-resource-view',
      orProcessKeyOf: 'agent',
    };
    const agentResolver: AccessResolver = {
      ...resolver,
      verifyProcessKey: (app, key) => (app === 'agent' && key === 'agent-key' ? 'ok' : 'unknown'),
    };
    expect(outcome(() => decideWithoutBearer(rule, request('agent-key'), input(), agentResolver))).toBe(
      'allow',
    );
    expect(outcome(() => decideWithoutBearer(rule, request('good'), input(), agentResolver))).toBe(
      'forbidden',
    );
    expect(outcome(() => decide(rule, viewer, input(), agentResolver))).toBe('allow');
    expect(outcome(() => decide(rule, bare, input(), agentResolver))).toBe('forbidden');
  });
  it('metrics: svc-agent only, 403 without a key', () => {
    const metrics: AccessRule = { kind: 'process-key', app: 'agent' };
    expect(outcome(() => decideWithoutBearer(metrics, request(undefined), input(), resolver))).toBe(
      'forbidden',
    );
  });
});

describe('delivery decisions of the event hub', () => {
  it('sight of system apps and output follow the same rules', () => {
    expect(seesApp(viewer, APPS['agent']!)).toBe(false);
    expect(seesApp(admin, APPS['agent']!)).toBe(true);
    expect(seesApp(viewer, APPS['alices']!)).toBe(true);
    expect(seesApp(maintenance, APPS['alices']!)).toBe(true);
    expect(seesApp(dev, APPS['alices']!)).toBe(false);
    expect(seesApp(dev, APPS['readable']!)).toBe(true);
    expect(seesApp(bare, APPS['shared']!)).toBe(true);
    expect(mayReadOutput(dev, APPS['devs']!)).toBe(true);
    expect(mayReadOutput(dev, APPS['alices']!)).toBe(false);
    expect(mayReadOutput(viewer, APPS['alices']!)).toBe(false);
    expect(mayReadOutput(maintenance, APPS['alices']!)).toBe(false); // app-manage-all widens which apps, not what
    expect(mayReadOutput(admin, APPS['alices']!)).toBe(true);
  });
});
