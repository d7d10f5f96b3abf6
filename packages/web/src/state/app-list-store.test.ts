import { describe, expect, it } from 'vitest';
import type { AppInfo, SubscriptionEvent } from '@svc/client/browser';
import { AppListStore, parseFilter } from './app-list-store.ts';
import { nextBackoff } from './backoff.ts';
import { frameBatcher } from './frame-batch.ts';

let sequence = 0;
function event(app: string, type: string, data: Record<string, unknown> = {}): SubscriptionEvent {
  return { subscription_id: 's', event_type: type, app_name: app, timestamp: 1_700_000_000_000, sequence: sequence++, data } as SubscriptionEvent;
}

function apps(n: number): AppInfo[] {
  return Array.from({ length: n }, (_, i) => ({ name: `app-${String(i).padStart(4, '0')}`, enabled: true, pid: 1000 + i, starts: 1, cpu: i % 7, memory: i * 1024, owner_principal_id: i % 2 ? 'alice' : 'bob' }));
}

describe('AppListStore', () => {
  it('applies queued events only on flush, one version bump per batch', () => {
    const store = new AppListStore();
    store.replaceAll(apps(3));
    const v = store.version;
    store.push(event('app-0000', 'EXIT', { exit_code: 2, pid: 1000 }));
    store.push(event('app-0001', 'HEALTH', { health: 1 }));
    store.push(event('app-0002', 'STATUS', { enabled: false }));
    expect(store.get('app-0000')?.state).toBe('running');
    expect(store.flush()).toBe(true);
    expect(store.version).toBe(v + 1);
    expect(store.get('app-0000')).toMatchObject({ state: 'failed', pid: undefined, returnCode: 2 });
    expect(store.get('app-0001')?.health).toBe(1);
    expect(store.get('app-0002')?.state).toBe('disabled');
    expect(store.flush()).toBe(false);
  });

  it('counts restarts from START, removes on REMOVED, and reports apps it does not know', () => {
    const store = new AppListStore();
    store.replaceAll(apps(2));
    store.push(event('app-0000', 'EXIT', { exit_code: 0 }));
    store.push(event('app-0000', 'START', { pid: 42, process_uuid: 'u2' }));
    store.push(event('app-0001', 'REMOVED'));
    store.push(event('new-app', 'START', { pid: 7 }));
    store.flush();
    expect(store.get('app-0000')).toMatchObject({ state: 'running', pid: 42, restarts: 1 });
    expect(store.get('app-0000')?.info['state']).toBe('running');
    expect(store.get('app-0001')).toBeUndefined();
    expect([...store.unknown]).toEqual(['new-app']);
    store.upsert({ name: 'new-app', pid: 7, enabled: true });
    expect(store.unknown.size).toBe(0);
    expect(store.size).toBe(2);
  });

  it('keeps unchanged rows identical across a snapshot (keyed rows skip them)', () => {
    const store = new AppListStore();
    const list = apps(5);
    store.replaceAll(list);
    const before = store.get('app-0003');
    store.replaceAll(list.map((a, i) => (i === 1 ? { ...a, cpu: 99 } : { ...a })));
    expect(store.get('app-0003')).toBe(before);
    expect(store.get('app-0001')?.cpu).toBe(99);
  });

  it('filters by text and state and sorts both ways with a stable tie-break', () => {
    const store = new AppListStore();
    store.replaceAll([...apps(4), { name: 'off', enabled: false, owner_principal_id: 'carol' }]);
    expect(store.view({ filter: 'state:disabled', sort: 'name', descending: false }).map((r) => r.name)).toEqual(['off']);
    expect(store.view({ filter: 'ALICE', sort: 'name', descending: false }).map((r) => r.name)).toEqual(['app-0001', 'app-0003']);
    expect(store.view({ filter: '', sort: 'memory', descending: true }).map((r) => r.name)).toEqual(['app-0003', 'app-0002', 'app-0001', 'app-0000', 'off']);
    expect(parseFilter('  web state:running  x ')).toEqual({ match: 'web x', state: 'running' });
    expect(parseFilter('state:bogus')).toEqual({ match: 'state:bogus', state: undefined });
  });

  it('takes 100 events for 1,000 apps in one cheap flush', () => {
    const store = new AppListStore();
    store.replaceAll(apps(1000));
    for (let i = 0; i < 100; i++) store.push(event(`app-${String((i * 37) % 1000).padStart(4, '0')}`, i % 2 ? 'HEALTH' : 'EXIT', { health: 1, exit_code: 1 }));
    store.flush();
    expect(store.view({ filter: 'state:failed', sort: 'name', descending: false }).length).toBe(50);
  });

  it('ignores hostile or unknown events', () => {
    const store = new AppListStore();
    store.replaceAll(apps(1));
    store.push(event('app-0000', 'HEALTH', { health: 'bad' }));
    store.push(event('app-0000', 'STATUS', { enabled: 'yes' }));
    store.push(event('app-0000', 'MYSTERY', {}));
    store.push(event('app-0000', '__disconnected__'));
    store.push(event('__proto__', 'REMOVED'));
    store.flush();
    expect(store.get('app-0000')).toMatchObject({ state: 'running', health: undefined });
  });
});

describe('scheduling helpers', () => {
  it('batches work into one frame however often it is scheduled', () => {
    const frames: (() => void)[] = [];
    let runs = 0;
    const schedule = frameBatcher(() => runs++, (cb) => frames.push(cb));
    for (let i = 0; i < 100; i++) schedule();
    expect(frames.length).toBe(1);
    frames.shift()!();
    expect(runs).toBe(1);
    schedule();
    expect(frames.length).toBe(1);
  });

  it('backs off from 0.5 s to 15 s with jitter', () => {
    expect(nextBackoff(0, 0.5)).toBe(500);
    expect(nextBackoff(1, 0.5)).toBe(1000);
    expect(nextBackoff(20, 0.5)).toBe(15_000);
    expect(nextBackoff(0, 0)).toBe(375);
    expect(nextBackoff(100, 1)).toBe(18_750);
  });
});
