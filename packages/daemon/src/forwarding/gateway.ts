// Gateway decisions, pure (spec "Forwarding", CONTRACT §3/§4): what a request carrying
// X-Target-Host becomes — served locally, refused, or forwarded — and what the forwarded request
// and the synthetic `__disconnected__` push look like. No sockets here; forwarder.ts acts on it.
//
//   X-Target-Host ─► parse (400) ─► self? ─► serve locally
//                                    │ no
//                    process key? (403) ─► allowed? (403) ─► subscription over HTTP? (405)
//                    ─► public route? forward without bearer : authenticate at the gateway (401)
//                    ─► channel: subscription ops of a TCP/WSS client → its dedicated link, else pool
import { randomUUID } from 'node:crypto';
import {
  DISCONNECTED_EVENT,
  EVENT_REQUEST_URI,
  PROCESS_KEY_HEADER,
  SvcError,
  TARGET_HOST_HEADER,
  type EventMessage,
  type Request as WireRequest,
  type Response as WireResponse,
} from '@svc/protocol';
import type { Access, ApiRequest, ApiResponse } from '../api/types.ts';
import {
  isSelfTarget,
  parseTargetHost,
  type ForwardTargetProvider,
  type ResolvedTarget,
  type SelfIdentity,
  type TargetAddress,
} from './targets.ts';

/** Operations whose effect lives on the connection (subscriptions): they need a dedicated link. */
const SUBSCRIPTION_OPERATIONS = new Set([
  'subscribeApplication',
  'unsubscribeApplication',
  'subscribeAll',
  'unsubscribeAll',
]);

/** What the local router knows about the path; undefined when no local operation matches. */
export interface RouteInfo {
  operationId: string;
  access: Access;
}

export type ForwardDecision =
  | { kind: 'local' }
  | {
      kind: 'forward';
      target: ResolvedTarget;
      /** Whether the gateway must authenticate the bearer first (every route but public ones). */
      authenticate: boolean;
      /** `session`: the client's dedicated link (subscriptions); `pool`: a shared link. */
      channel: 'pool' | 'session';
      /** The subscription bookkeeping the response feeds, if any. */
      subscription: 'subscribe' | 'unsubscribe' | undefined;
    };

export interface DecideInput {
  request: Pick<ApiRequest, 'method' | 'headers' | 'query' | 'connection'>;
  route: RouteInfo | undefined;
  targets: ForwardTargetProvider;
  self: SelfIdentity;
}

function allowedTarget(
  header: string,
  target: TargetAddress,
  targets: ForwardTargetProvider,
): ResolvedTarget {
  const resolved = targets.resolve(target);
  if (resolved === undefined)
    throw new SvcError(
      'target_not_allowed',
      `X-Target-Host ${JSON.stringify(header.slice(0, 64))} is not an allowed forward target`,
    );
  return resolved;
}

/**
 * The check a WSS upgrade naming `X-Target-Host` (the default target of its frames) gets before it
 * is accepted: a malformed or not allowed target refuses the upgrade itself (400 / 403).
 */
export function checkUpgradeTarget(header: string, targets: ForwardTargetProvider, self: SelfIdentity): void {
  const target = parseTargetHost(header);
  if (!isSelfTarget(target, self)) allowedTarget(header, target, targets);
}

/** Throws SvcError for every refusal; every refusal happens before any connection is opened. */
export function decideForward({ request, route, targets, self }: DecideInput): ForwardDecision {
  const header = request.headers[TARGET_HOST_HEADER];
  if (header === undefined) return { kind: 'local' };
  const target = parseTargetHost(header);
  if (isSelfTarget(target, self)) return { kind: 'local' };
  if (request.headers[PROCESS_KEY_HEADER] !== undefined)
    throw new SvcError(
      'process_key_not_forwarded',
      'requests carrying X-Svc-Process-Key are never forwarded; a worker talks to its own daemon',
    );
  const resolved = allowedTarget(header, target, targets);
  if (resolved === undefined)
    throw new SvcError(
      'target_not_allowed',
      `X-Target-Host ${JSON.stringify(header.slice(0, 64))} is not an allowed forward target`,
    );
  const subscription = subscriptionKind(request, route);
  if (subscription !== undefined && request.connection === undefined)
    throw new SvcError(
      'persistent_connection_required',
      'subscriptions need a persistent connection (TCP or WSS), also when forwarded',
    );
  return {
    kind: 'forward',
    target: resolved,
    // Unknown routes fail closed: only a route this node knows to be public (or open to anyone
    // without a token, when none is sent) goes without a bearer.
    authenticate:
      route === undefined ||
      (route.access.kind !== 'public' &&
        !(route.access.kind === 'visible-app' && request.headers['authorization'] === undefined)),
    channel: subscription === undefined ? 'pool' : 'session',
    subscription,
  };
}

function subscriptionKind(
  request: Pick<ApiRequest, 'method' | 'query'>,
  route: RouteInfo | undefined,
): 'subscribe' | 'unsubscribe' | undefined {
  if (route === undefined) return undefined;
  if (SUBSCRIPTION_OPERATIONS.has(route.operationId))
    return request.method === 'DELETE' ? 'unsubscribe' : 'subscribe';
  // Registration with `subscribe_events` subscribes atomically (spec "Event subscription").
  if (route.operationId === 'registerApplication' && request.query['subscribe_events'] !== undefined)
    return 'subscribe';
  return undefined;
}

/** Headers that describe one HTTP hop (RFC 9110 §7.6.1) or this node's transports: never passed on. */
const HOP_HEADERS = new Set([
  TARGET_HOST_HEADER,
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'expect',
  'sec-websocket-key',
  'sec-websocket-version',
  'sec-websocket-protocol',
  'sec-websocket-extensions',
]);

/**
 * The request as the target receives it: X-Target-Host removed (no loops), the bearer kept, and
 * the original client address appended to X-Forwarded-For (a target trusts no process key then).
 */
export function forwardedRequest(
  request: Pick<ApiRequest, 'method' | 'path' | 'query' | 'headers' | 'remoteAddress'>,
  body: Uint8Array,
): WireRequest {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers))
    if (!HOP_HEADERS.has(name)) headers[name] = value;
  const previous = headers['x-forwarded-for'];
  headers['x-forwarded-for'] =
    previous === undefined || previous === ''
      ? request.remoteAddress
      : `${previous}, ${request.remoteAddress}`;
  return {
    uuid: randomUUID(),
    request_uri: request.path,
    http_method: request.method,
    client_addr: request.remoteAddress,
    headers,
    query: { ...request.query },
    body,
  };
}

export function fromWireResponse(response: WireResponse): ApiResponse {
  return {
    status: response.http_status,
    headers: { ...response.headers },
    contentType: response.body_msg_type,
    body: response.body,
  };
}

/** `subscription_id` and `app_name` of a successful subscribe answer, if the body has them. */
export function subscriptionOf(response: ApiResponse): { id: string; app: string } | undefined {
  if (response.status < 200 || response.status >= 300) return undefined;
  try {
    const body = JSON.parse(Buffer.from(response.body).toString('utf8')) as unknown;
    if (typeof body !== 'object' || body === null) return undefined;
    const { subscription_id: id, app_name: app, name } = body as Record<string, unknown>;
    if (typeof id !== 'string') return undefined;
    // The atomic registration answers with the app (`name`) plus `subscription_id`.
    return { id, app: typeof app === 'string' ? app : typeof name === 'string' ? name : '' };
  } catch {
    return undefined;
  }
}

/**
 * The push a gateway sends to a subscription whose route failed (spec Events rule 7): an event
 * message with `event_type` `__disconnected__` and `data.message`, in the push shape of every event.
 */
export function disconnectedPush(
  subscription: { id: string; app: string; sequence: number },
  message: string,
  now: number,
): WireResponse {
  const event: EventMessage = {
    subscription_id: subscription.id,
    event_type: DISCONNECTED_EVENT,
    app_name: subscription.app,
    timestamp: now,
    sequence: subscription.sequence + 1,
    data: { message },
  };
  return {
    uuid: randomUUID(),
    request_uri: EVENT_REQUEST_URI,
    http_status: 200,
    body_msg_type: 'application/json',
    headers: {
      'X-Subscription-Id': subscription.id,
      'X-Event-Type': DISCONNECTED_EVENT,
      'X-App-Name': subscription.app,
    },
    body: Buffer.from(JSON.stringify(event)),
  };
}
