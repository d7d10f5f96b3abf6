// The demultiplexer alone (no socket): the ordering rules that do not depend on timing.
import { describe, expect, it } from 'vitest';
import { EVENT_REQUEST_URI, type Response } from '@svc/protocol';
import { Demultiplexer } from './demux.ts';
import { TransportDisconnectedError } from './errors.ts';
import type { SubscriptionEvent } from './types.ts';

function answer(uuid: string, status = 200): Response {
  return {
    uuid,
    request_uri: '/svc/self',
    http_status: status,
    body_msg_type: 'application/json',
    headers: {},
    body: new Uint8Array(),
  };
}

function event(id: string, sequence: number): Response {
  const body = { subscription_id: id, event_type: 'STATUS', app_name: 'a', timestamp: 0, sequence, data: {} };
  return {
    uuid: `e-${id}-${sequence}`,
    request_uri: EVENT_REQUEST_URI,
    http_status: 200,
    body_msg_type: 'application/json',
    headers: { 'X-Subscription-Id': id },
    body: new TextEncoder().encode(JSON.stringify(body)),
  };
}

const sequences = (events: SubscriptionEvent[]): number[] =>
  events.map((e) => ('sequence' in e ? e.sequence : -1));

describe('Demultiplexer', () => {
  it('S7: an answer delivered synchronously right after expect() (before any await) is not dropped', async () => {
    const demux = new Demultiplexer();
    const pending = demux.expect('u1');
    demux.deliver(answer('u1', 201));
    await expect(pending).resolves.toMatchObject({ http_status: 201 });
    expect(demux.pendingRequests).toBe(0);
  });

  it('routes a push by request_uri alone, even when its uuid equals a pending request', async () => {
    const demux = new Demultiplexer();
    const pending = demux.expect('e-s-1');
    const got: SubscriptionEvent[] = [];
    demux.register('s', (e) => {
      got.push(e);
    });
    demux.deliver(event('s', 1));
    expect(sequences(got)).toEqual([1]);
    expect(demux.pendingRequests).toBe(1);
    demux.deliver(answer('e-s-1'));
    await expect(pending).resolves.toMatchObject({ http_status: 200 });
  });

  it('drops events for an unsubscribed id instead of buffering them again', () => {
    const demux = new Demultiplexer();
    demux.register('s', () => {});
    demux.unregister('s');
    demux.deliver(event('s', 2));
    expect(demux.bufferedSubscriptions).toBe(0);
  });

  it('stop: waiters reject with TransportDisconnectedError, callbacks get one __disconnected__, later ones at registration', async () => {
    const demux = new Demultiplexer();
    const pending = demux.expect('u');
    const a: SubscriptionEvent[] = [];
    demux.register('a', (e) => {
      a.push(e);
    });
    demux.deliver(event('b', 1)); // buffered for an unregistered id
    demux.stop(new Error('reset'));
    demux.stop(new Error('again'));
    await expect(pending).rejects.toBeInstanceOf(TransportDisconnectedError);
    await expect(demux.expect('v')).rejects.toBeInstanceOf(TransportDisconnectedError);
    expect(a).toEqual([{ subscription_id: 'a', event_type: '__disconnected__' }]);
    expect(demux.bufferedSubscriptions).toBe(0);
    const b: SubscriptionEvent[] = [];
    demux.register('b', (e) => {
      b.push(e);
    });
    expect(b).toEqual([{ subscription_id: 'b', event_type: '__disconnected__' }]);
  });

  it("a gateway's __disconnected__ push is a per-subscription event, not a transport stop (Events rule 7)", async () => {
    const demux = new Demultiplexer();
    const a: SubscriptionEvent[] = [];
    const b: SubscriptionEvent[] = [];
    demux.register('a', (e) => {
      a.push(e);
    });
    demux.register('b', (e) => {
      b.push(e);
    });
    const pending = demux.expect('u');
    const body = {
      subscription_id: 'a',
      event_type: '__disconnected__',
      app_name: 'web',
      timestamp: 1,
      sequence: 3,
      data: { message: 'forward target node-b:6059 closed the connection' },
    };
    demux.deliver({
      uuid: 'gw-1',
      request_uri: EVENT_REQUEST_URI,
      http_status: 200,
      body_msg_type: 'application/json',
      headers: { 'X-Subscription-Id': 'a', 'X-Event-Type': '__disconnected__', 'X-App-Name': 'web' },
      body: new TextEncoder().encode(JSON.stringify(body)),
    });
    expect(a).toEqual([body]);
    expect(demux.stopped).toBe(false); // the local transport is up
    demux.deliver(event('b', 1));
    demux.deliver(answer('u'));
    await expect(pending).resolves.toMatchObject({ uuid: 'u' });
    expect(b.map((e) => e.event_type)).toEqual(['STATUS']);
  });

  it('a throwing callback is reported and does not stop later events', () => {
    const errors: unknown[] = [];
    const demux = new Demultiplexer({ onCallbackError: (e) => errors.push(e) });
    const got: number[] = [];
    demux.register('s', (e) => {
      if ('sequence' in e) got.push(e.sequence);
      if (got.length === 1) throw new Error('callback bug');
    });
    demux.deliver(event('s', 1));
    demux.deliver(event('s', 2));
    expect(got).toEqual([1, 2]);
    expect(errors).toHaveLength(1);
  });
});
