// The live connection: one WSS client for event subscriptions, reopened with backoff when it drops
// (the daemon restarted, the network went away), after which every subscription is made again and
// told to catch up (`resync`: the list re-reads, output resumes from its last byte position).
// `connectionState` drives the banner.
import { signal } from '@preact/signals';
import { connectWss, SvcClient, type EventSelection, type SubscriptionEvent, type WssTransport } from '@svc/client/browser';
import { onToken } from './auth/sign-in.ts';
import { nextBackoff } from './state/backoff.ts';

export type ConnectionState = 'idle' | 'connecting' | 'online' | 'offline';
export const connectionState = signal<ConnectionState>('idle');

export interface LiveSubscription {
  /** An application name, or `*` for every application. */
  app: string;
  events: EventSelection;
  onEvent: (event: SubscriptionEvent) => void;
  /** Called after each (re)subscription: catch up on what may have been missed. */
  resync: () => void;
}

const subscriptions = new Map<LiveSubscription, string | undefined>();
let token: string | undefined;
let client: SvcClient | undefined;
let opening: Promise<void> | undefined;
let attempt = 0;
let retryTimer: ReturnType<typeof setTimeout> | undefined;

onToken((next) => {
  token = next;
  if (next === undefined) void close();
  else client?.setToken(next);
});

async function subscribeOne(on: SvcClient, sub: LiveSubscription): Promise<void> {
  const callback = (event: SubscriptionEvent) => sub.onEvent(event);
  const info =
    sub.app === '*' ? await on.subscribeAll(sub.events, callback) : await on.subscribe(sub.app, sub.events, callback);
  if (!subscriptions.has(sub) || client !== on) {
    await on.unsubscribe(info).catch(() => undefined);
    return;
  }
  subscriptions.set(sub, info.subscription_id);
  sub.resync();
}

function open(): Promise<void> {
  opening ??= (async () => {
    if (token === undefined) return;
    connectionState.value = connectionState.value === 'offline' ? 'offline' : 'connecting';
    let transport: WssTransport;
    try {
      transport = await connectWss({ url: window.location.origin, token });
    } catch {
      scheduleRetry();
      return;
    }
    const opened = new SvcClient({ transport, token });
    client = opened;
    attempt = 0;
    connectionState.value = 'online';
    void transport.closed.then(() => {
      if (client !== opened) return;
      client = undefined;
      for (const sub of subscriptions.keys()) subscriptions.set(sub, undefined);
      connectionState.value = 'offline';
      scheduleRetry();
    });
    await Promise.all([...subscriptions.keys()].map((sub) => subscribeOne(opened, sub).catch(() => undefined)));
  })().finally(() => (opening = undefined));
  return opening;
}

function scheduleRetry(): void {
  if (token === undefined || subscriptions.size === 0) return;
  connectionState.value = 'offline';
  clearTimeout(retryTimer);
  const delay = nextBackoff(attempt++, Math.random());
  retryTimer = setTimeout(() => void open(), delay);
}

async function close(): Promise<void> {
  clearTimeout(retryTimer);
  const current = client;
  client = undefined;
  connectionState.value = 'idle';
  await current?.close().catch(() => undefined);
}

/** Subscribes while the returned function is not called; survives reconnects. */
export function live(sub: LiveSubscription): () => void {
  subscriptions.set(sub, undefined);
  if (client !== undefined) void subscribeOne(client, sub).catch(() => undefined);
  else void open();
  return () => {
    const id = subscriptions.get(sub);
    subscriptions.delete(sub);
    if (id !== undefined && client !== undefined) void client.unsubscribe(id).catch(() => undefined);
  };
}

/** Reconnects at once (the banner's "retry now"). */
export function reconnectNow(): void {
  clearTimeout(retryTimer);
  attempt = 0;
  void open();
}
