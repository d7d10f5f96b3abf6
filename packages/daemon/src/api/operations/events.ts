// Event subscriptions (spec "Event subscription"; CONTRACT §5): only on a persistent connection
// (TCP or WSS); pushes are delivered by the EventHub (events/event-hub.ts).
import { SvcError } from '@svc/protocol';
import * as z from 'zod';
import { eventList, parseEventList } from '../../events/event-names.ts';
import { ALL_APPS } from '../../events/subscription-registry.ts';
import type { Subscription } from '../../events/subscription-registry.ts';
import { json } from '../responses.ts';
import type { Services } from '../services.ts';
import { Subscribed, Unsubscribed } from '../schemas.ts';
import {
  defineOperation,
  type ApiRequest,
  type Operation,
  type OperationContext,
  type PersistentConnection,
} from '../types.ts';
import { requiredParam, stringParam } from './query.ts';

type Ctx = OperationContext<Services, { subscription_id: string }>;

const EVENTS_DESCRIPTION =
  'comma-separated START, EXIT, STDOUT, HEALTH, STATUS, REMOVED, ALL; empty = all. STDOUT needs app-output-view on the app';

/** The connection of a TCP or WSS request; plain HTTP (also forwarded) is 405. */
export function persistentConnection(request: ApiRequest): PersistentConnection {
  const connection = request.connection;
  if (connection === undefined)
    throw new SvcError(
      'persistent_connection_required',
      'subscriptions need a persistent connection (TCP or WSS); plain HTTP cannot carry events',
    );
  return connection;
}

/** The answer to a subscribe: `{subscription_id, app_name, events}` (app_name "*" for all apps). */
export function subscriptionBody(subscription: Subscription): {
  subscription_id: string;
  app_name: string;
  events: string[];
} {
  return {
    subscription_id: subscription.id,
    app_name: subscription.app,
    events: eventList(subscription.events),
  };
}

function unsubscribe(context: Ctx): ReturnType<typeof json> {
  const removed = context.services.events.unsubscribe(context.input.query.subscription_id);
  return json({ subscription_id: removed.id, app_name: removed.app, removed: true });
}

const eventsQuery = z.object({ events: stringParam(EVENTS_DESCRIPTION) });
const subscriptionQuery = z.object({
  subscription_id: requiredParam('subscription_id', 'the subscription to remove').min(1, {
    error: 'subscription_id is required',
  }),
});
const subscribed = [{ status: 200, description: 'the subscription', json: Subscribed }] as const;
const unsubscribed = [{ status: 200, description: 'removed', json: Unsubscribed }] as const;

export const eventOperations: Operation<Services>[] = [
  defineOperation<Services, typeof eventsQuery>({
    id: 'subscribeApplication',
    connection: 'persistent',
    method: 'POST',
    path: '/svc/app/{name}/subscribe',
    access: {
      kind: 'app',
      permission: 'app-subscribe',
      app: { from: 'path' },
      missing: 'not-found',
      changes: false,
    },
    summary: 'Subscribe this TCP/WSS connection to the events of one application (405 over plain HTTP)',
    query: eventsQuery,
    responses: subscribed,
    async handle({ request, params, input, principal, services }) {
      const selection = parseEventList(input.query.events);
      return json(
        subscriptionBody(
          services.events.subscribe(request.connection!, principal!, params['name']!, selection),
        ),
      );
    },
  }),
  defineOperation<Services, typeof subscriptionQuery>({
    id: 'unsubscribeApplication',
    connection: 'persistent',
    method: 'DELETE',
    path: '/svc/app/{name}/subscribe',
    access: { kind: 'subscription-owner', permission: 'app-subscribe', app: 'path' },
    summary: 'Remove a subscription to this application (its owner only)',
    query: subscriptionQuery,
    responses: unsubscribed,
    async handle(context) {
      return unsubscribe(context);
    },
  }),
  defineOperation<Services, typeof eventsQuery>({
    id: 'subscribeAll',
    connection: 'persistent',
    method: 'POST',
    path: '/svc/subscribe',
    access: { kind: 'permission', permission: 'app-subscribe', also: ['app-view-all'] },
    summary:
      'Subscribe this TCP/WSS connection to the events of every application (needs app-view-all too); app_name "*"',
    query: eventsQuery,
    responses: subscribed,
    async handle({ request, input, principal, services }) {
      const selection = parseEventList(input.query.events);
      return json(
        subscriptionBody(services.events.subscribe(request.connection!, principal!, ALL_APPS, selection)),
      );
    },
  }),
  defineOperation<Services, typeof subscriptionQuery>({
    id: 'unsubscribeAll',
    connection: 'persistent',
    method: 'DELETE',
    path: '/svc/subscribe',
    access: { kind: 'subscription-owner', permission: 'app-subscribe', app: 'any' },
    summary: 'Remove a subscription by id, whatever it is subscribed to (its owner only)',
    query: subscriptionQuery,
    responses: unsubscribed,
    async handle(context) {
      return unsubscribe(context);
    },
  }),
];
