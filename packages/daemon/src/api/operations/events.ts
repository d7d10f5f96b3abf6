// Event subscriptions (spec "Event subscription"; CONTRACT §5): only on a persistent connection
// (TCP or WSS); pushes are delivered by the EventHub (events/event-hub.ts).
import { SvcError } from '@svc/protocol';
import { authorizeApp } from '../../auth/authorizer.ts';
import { eventList, parseEventList } from '../../events/event-names.ts';
import { ALL_APPS } from '../../events/subscription-registry.ts';
import type { Subscription } from '../../events/subscription-registry.ts';
import { json } from '../responses.ts';
import type { Services } from '../services.ts';
import type { ApiRequest, Operation, OperationContext, PersistentConnection } from '../types.ts';
import { appAccess } from './apps.ts';

type Ctx = OperationContext<Services>;

const EVENTS_QUERY = {
  name: 'events',
  description:
    'comma-separated START, EXIT, STDOUT, HEALTH, STATUS, REMOVED, ALL; empty = all. STDOUT needs app-output-view on the app',
};

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

function unsubscribe(context: Ctx, app: string | undefined): ReturnType<typeof json> {
  persistentConnection(context.request);
  const id = context.request.query['subscription_id'];
  if (id === undefined || id === '') throw new SvcError('invalid_query', 'subscription_id is required');
  const removed = context.services.events.unsubscribe(id, context.principal!.id, app);
  return json({ subscription_id: removed.id, app_name: removed.app, removed: true });
}

export const eventOperations: Operation<Services>[] = [
  {
    id: 'subscribeApplication',
    method: 'POST',
    path: '/svc/app/{name}/subscribe',
    access: { kind: 'permission', permission: 'app-subscribe' },
    summary: 'Subscribe this TCP/WSS connection to the events of one application (405 over plain HTTP)',
    query: [EVENTS_QUERY],
    async handle(context) {
      const connection = persistentConnection(context.request);
      const name = context.params['name']!;
      const selection = parseEventList(context.request.query['events']);
      const access = appAccess(context, name);
      const principal = context.principal!;
      authorizeApp(principal, 'app-subscribe', { owner: access.owner, others: access.others });
      return json(
        subscriptionBody(context.services.events.subscribe(connection, principal, name, selection)),
      );
    },
  },
  {
    id: 'unsubscribeApplication',
    method: 'DELETE',
    path: '/svc/app/{name}/subscribe',
    access: { kind: 'permission', permission: 'app-subscribe' },
    summary: 'Remove a subscription to this application (its owner only)',
    query: [{ name: 'subscription_id', description: 'the subscription to remove', required: true }],
    async handle(context) {
      return unsubscribe(context, context.params['name']);
    },
  },
  {
    id: 'subscribeAll',
    method: 'POST',
    path: '/svc/subscribe',
    access: { kind: 'permission', permission: 'app-subscribe' },
    summary:
      'Subscribe this TCP/WSS connection to the events of every application (needs app-view-all too); app_name "*"',
    query: [EVENTS_QUERY],
    async handle(context) {
      const connection = persistentConnection(context.request);
      const selection = parseEventList(context.request.query['events']);
      const principal = context.principal!;
      if (!principal.permissions.has('app-view-all'))
        throw new SvcError('forbidden', 'permission app-view-all required to subscribe to all applications');
      return json(
        subscriptionBody(context.services.events.subscribe(connection, principal, ALL_APPS, selection)),
      );
    },
  },
  {
    id: 'unsubscribeAll',
    method: 'DELETE',
    path: '/svc/subscribe',
    access: { kind: 'permission', permission: 'app-subscribe' },
    summary: 'Remove a subscription by id, whatever it is subscribed to (its owner only)',
    query: [{ name: 'subscription_id', description: 'the subscription to remove', required: true }],
    async handle(context) {
      return unsubscribe(context, undefined);
    },
  },
];
