import { describe, expect, it } from 'vitest';
import { SvcError } from '@svc/protocol';
import type { PersistentConnection } from '../api/types.ts';
import {
  decideForward,
  disconnectedPush,
  forwardedRequest,
  subscriptionOf,
  type DecideInput,
  type RouteInfo,
} from './gateway.ts';
import { AllowedTargets, staticTargets } from './targets.ts';

const targets = new AllowedTargets([staticTargets(() => ['node-b', '127.0.0.1:7001'])]);
const self = { hostName: 'node-a', listenAddress: '127.0.0.1', tcpPort: () => 7000 };
const protectedRoute: RouteInfo = {
  operationId: 'listApplications',
  access: { kind: 'permission', permission: 'app-view-all' },
};

/** A TCP or WSS client's connection (only its presence matters to the gateway). */
const persistent: PersistentConnection = {
  id: 'c',
  transport: 'tcp',
  principalId: undefined,
  push: () => true,
  onClose: () => undefined,
  close: () => undefined,
};

function input(
  headers: Record<string, string>,
  route: RouteInfo | undefined = protectedRoute,
  extra: Partial<DecideInput['request']> = {},
): DecideInput {
  return {
    request: { method: 'GET', headers, query: {}, connection: persistent, ...extra },
    route,
    targets,
    self,
  };
}

function refusal(decide: () => unknown): string {
  try {
    decide();
  } catch (error) {
    if (error instanceof SvcError) return error.code;
    throw error;
  }
  return 'no refusal';
}

describe('decideForward', () => {
  it('no header, or a header naming this node: served locally', () => {
    expect(decideForward(input({}))).toEqual({ kind: 'local' });
    expect(decideForward(input({ 'x-target-host': 'node-a' }))).toEqual({ kind: 'local' });
    expect(decideForward(input({ 'x-target-host': '127.0.0.1:7000' }))).toEqual({ kind: 'local' });
  });

  it('an allowed target: forwarded over the pool, bearer checked at the gateway', () => {
    expect(decideForward(input({ 'x-target-host': 'node-b' }))).toEqual({
      kind: 'forward',
      target: { host: 'node-b', port: 6059, key: 'node-b:6059' },
      authenticate: true,
      channel: 'pool',
      subscription: undefined,
    });
  });

  it('public routes go without a bearer; unknown routes need one (fail closed)', () => {
    const publicRoute: RouteInfo = { operationId: 'authConfig', access: { kind: 'public' } };
    expect(decideForward(input({ 'x-target-host': 'node-b' }, publicRoute))).toMatchObject({
      authenticate: false,
    });
    expect(decideForward(input({ 'x-target-host': 'node-b' }, undefined))).toMatchObject({
      authenticate: true,
    });
  });

  it('the health endpoint goes without a bearer when none is sent, and checks one that is', () => {
    const health: RouteInfo = { operationId: 'getApplicationHealth', access: { kind: 'visible-app' } };
    expect(decideForward(input({ 'x-target-host': 'node-b' }, health))).toMatchObject({
      authenticate: false,
    });
    expect(
      decideForward(input({ 'x-target-host': 'node-b', authorization: 'Bearer t' }, health)),
    ).toMatchObject({ authenticate: true });
  });

  it('refusals, in order, before anything is opened', () => {
    expect(refusal(() => decideForward(input({ 'x-target-host': 'a b' })))).toBe('invalid_target_host');
    expect(refusal(() => decideForward(input({ 'x-target-host': 'node-c' })))).toBe('target_not_allowed');
    expect(refusal(() => decideForward(input({ 'x-target-host': '127.0.0.1:7002' })))).toBe(
      'target_not_allowed',
    );
    // The process key is refused even towards an allowed target, and before the allow-list.
    expect(refusal(() => decideForward(input({ 'x-target-host': 'node-c', 'x-svc-process-key': 'k' })))).toBe(
      'process_key_not_forwarded',
    );
    // ...but a worker talking to its own daemon through its own name is not forwarding at all.
    expect(decideForward(input({ 'x-target-host': 'node-a', 'x-svc-process-key': 'k' }))).toEqual({
      kind: 'local',
    });
  });

  it('subscription operations: dedicated link on TCP/WSS, 405 over plain HTTP', () => {
    const subscribe: RouteInfo = {
      operationId: 'subscribeApplication',
      access: { kind: 'permission', permission: 'app-subscribe' },
    };
    const unsubscribe: RouteInfo = { ...subscribe, operationId: 'unsubscribeAll' };
    const header = { 'x-target-host': 'node-b' };
    expect(decideForward(input(header, subscribe, { method: 'POST' }))).toMatchObject({
      channel: 'session',
      subscription: 'subscribe',
    });
    expect(
      decideForward(input(header, unsubscribe, { method: 'DELETE', connection: persistent })),
    ).toMatchObject({
      channel: 'session',
      subscription: 'unsubscribe',
    });
    expect(
      refusal(() => decideForward(input(header, subscribe, { method: 'POST', connection: undefined }))),
    ).toBe('persistent_connection_required');
    const register: RouteInfo = { operationId: 'registerApplication', access: subscribe.access };
    expect(decideForward(input(header, register, { method: 'PUT' }))).toMatchObject({ channel: 'pool' });
    expect(
      decideForward(input(header, register, { method: 'PUT', query: { subscribe_events: 'ALL' } })),
    ).toMatchObject({ channel: 'session', subscription: 'subscribe' });
    expect(
      refusal(() =>
        decideForward(
          input(header, register, { method: 'PUT', query: { subscribe_events: '' }, connection: undefined }),
        ),
      ),
    ).toBe('persistent_connection_required');
  });
});

describe('forwardedRequest', () => {
  const request: Parameters<typeof forwardedRequest>[0] = {
    method: 'PUT',
    path: '/svc/app/x',
    query: { subscribe_events: 'ALL' },
    headers: {
      'x-target-host': 'node-b',
      authorization: 'Bearer t',
      host: 'node-a:6058',
      'content-length': '2',
      connection: 'keep-alive',
      'content-type': 'application/json',
      'x-custom': 'kept',
    },
    remoteAddress: '10.0.0.7',
  };

  it('drops X-Target-Host and hop headers, keeps the bearer, adds X-Forwarded-For', () => {
    const wire = forwardedRequest(request, Buffer.from('{}'));
    expect(wire).toMatchObject({
      request_uri: '/svc/app/x',
      http_method: 'PUT',
      client_addr: '10.0.0.7',
      query: { subscribe_events: 'ALL' },
      headers: {
        authorization: 'Bearer t',
        'content-type': 'application/json',
        'x-custom': 'kept',
        'x-forwarded-for': '10.0.0.7',
      },
    });
    expect(Object.keys(wire.headers).sort()).toEqual([
      'authorization',
      'content-type',
      'x-custom',
      'x-forwarded-for',
    ]);
    expect(wire.uuid).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('appends to an existing X-Forwarded-For', () => {
    const wire = forwardedRequest(
      { ...request, headers: { 'x-forwarded-for': '192.0.2.1' } },
      Buffer.from('{}'),
    );
    expect(wire.headers['x-forwarded-for']).toBe('192.0.2.1, 10.0.0.7');
  });
});

describe('subscription bookkeeping and the __disconnected__ push', () => {
  const response = (status: number, body: unknown) => ({
    status,
    headers: {},
    contentType: 'application/json',
    body: Buffer.from(JSON.stringify(body)),
  });

  it('reads subscribe answers, including the atomic registration', () => {
    expect(subscriptionOf(response(200, { subscription_id: 's1', app_name: 'web', events: [] }))).toEqual({
      id: 's1',
      app: 'web',
    });
    expect(subscriptionOf(response(200, { name: 'web', subscription_id: 's2' }))).toEqual({
      id: 's2',
      app: 'web',
    });
    expect(subscriptionOf(response(200, { name: 'web' }))).toBeUndefined();
    expect(subscriptionOf(response(403, { subscription_id: 's3' }))).toBeUndefined();
    expect(
      subscriptionOf({ status: 200, headers: {}, contentType: 'text/plain', body: Buffer.from('x') }),
    ).toBeUndefined();
  });

  it('has the push shape: /svc/event, spec headers, event message with data.message', () => {
    const push = disconnectedPush({ id: 's1', app: 'web', sequence: 4 }, 'target gone', 1234);
    expect(push).toMatchObject({
      request_uri: '/svc/event',
      http_status: 200,
      body_msg_type: 'application/json',
      headers: { 'X-Subscription-Id': 's1', 'X-Event-Type': '__disconnected__', 'X-App-Name': 'web' },
    });
    expect(JSON.parse(Buffer.from(push.body).toString('utf8'))).toEqual({
      subscription_id: 's1',
      event_type: '__disconnected__',
      app_name: 'web',
      timestamp: 1234,
      sequence: 5,
      data: { message: 'target gone' },
    });
  });
});
