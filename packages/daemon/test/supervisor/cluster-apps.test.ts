// The cluster source of definitions through a real supervisor: a cluster app runs and is visible,
// is never stored, cannot be changed through the local app API, never replaces a local app, and
// gets the peer environment at its start.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.ts';
import { fixture, type Fixture } from './helpers.ts';

let fx: Fixture | undefined;
afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
});

const code = async (promise: Promise<unknown>): Promise<string | undefined> =>
  promise.then(
    () => undefined,
    (error: unknown) => (error as { code?: string }).code,
  );

describe('cluster apps in the supervisor', () => {
  it('runs a cluster app, shows it with cluster: true, stores nothing and refuses local changes', async () => {
    fx = await fixture();
    const sup = fx.sup;
    expect(await sup.cluster.apply('web', { command: 'sleep 30' }, 'alice')).toBe('started');
    await waitFor(() => sup.get('web')?.['state'] === 'running');
    const view = sup.get('web')!;
    expect(view['cluster']).toBe(true);
    expect(view['owner_principal_id']).toBe('alice');
    expect(existsSync(join(fx.dir, 'work', 'apps', 'web.yaml'))).toBe(false);
    expect(sup.cluster.names()).toEqual(['web']);
    // The same content again: nothing restarts.
    const pid = view['pid'];
    expect(await sup.cluster.apply('web', { name: 'web', command: 'sleep 30' }, 'alice')).toBe('unchanged');
    expect(sup.get('web')?.['pid']).toBe(pid);
    for (const change of [
      sup.register({ name: 'web', command: 'sleep 1' }, 'bob'),
      sup.remove('web'),
      sup.disable('web'),
      sup.enable('web'),
    ])
      expect(await code(change)).toBe('conflict');
    expect(sup.get('web')?.['pid']).toBe(pid);
  });

  it('replaces a cluster app whose content changed and removes it on withdraw', async () => {
    fx = await fixture();
    const sup = fx.sup;
    await sup.cluster.apply('job', { command: 'sleep 30' }, undefined);
    await waitFor(() => sup.get('job')?.['state'] === 'running');
    const first = sup.get('job')!['pid'];
    expect(await sup.cluster.apply('job', { command: 'sleep 31' }, undefined)).toBe('replaced');
    await waitFor(() => sup.get('job')?.['state'] === 'running' && sup.get('job')?.['pid'] !== first);
    expect(sup.get('job')?.['command']).toBe('sleep 31');
    expect(await sup.cluster.withdraw('job')).toBe(true);
    expect(sup.get('job')).toBeUndefined();
    expect(fx.events.some((e) => e.type === 'REMOVED' && e.app === 'job')).toBe(true);
    expect(await sup.cluster.withdraw('job')).toBe(false);
    expect(sup.cluster.names()).toEqual([]);
  });

  it('never replaces a local app of the same name and reports the conflict in its view', async () => {
    fx = await fixture();
    const sup = fx.sup;
    await sup.register({ name: 'db', command: 'sleep 30' }, 'bob');
    expect(await sup.cluster.apply('db', { command: 'sleep 5' }, 'alice')).toBe('conflict');
    expect(sup.get('db')?.['command']).toBe('sleep 30');
    expect(sup.get('db')?.['cluster']).toBeUndefined();
    expect(String(sup.get('db')?.['cluster_conflict'])).toMatch(/local one is kept/);
    // A withdraw of the task leaves the local app alone.
    expect(await sup.cluster.withdraw('db')).toBe(false);
    expect(sup.get('db')?.['command']).toBe('sleep 30');
    expect(sup.get('db')?.['cluster_conflict']).toBeUndefined();
    // Once the local app is gone, the placement applies.
    await sup.remove('db');
    expect(await sup.cluster.apply('db', { command: 'sleep 5' }, 'alice')).toBe('started');
  });

  it('refuses hostile contents: a different name, a pid to adopt, an invalid definition', async () => {
    fx = await fixture();
    const sup = fx.sup;
    expect(await code(sup.cluster.apply('a', { name: 'b', command: 'true' }, undefined))).toBe('invalid_app');
    expect(await code(sup.cluster.apply('a', { command: 'true', pid: process.pid }, undefined))).toBe(
      'invalid_app',
    );
    expect(await code(sup.cluster.apply('a', { command: 'true', system: true }, undefined))).toBe(
      'invalid_app',
    );
    expect(await code(sup.cluster.apply('a', { command: 42 }, undefined))).toBe('invalid_app');
    expect(await code(sup.cluster.apply('a', { command: 'x'.repeat(1_000_000) }, undefined))).toBe(
      'invalid_app',
    );
    expect(sup.list()).toEqual([]);
  });

  it('gives cluster and local processes the peer environment at their start', async () => {
    fx = await fixture({ peerEnvironment: () => ({ SVC_SERVICE_WEB_ADDR: '10.0.0.1:80,10.0.0.2:80' }) });
    const sup = fx.sup;
    const out = join(fx.dir, 'env.txt');
    await sup.cluster.apply(
      'peer',
      { command: `sh -c 'echo $SVC_SERVICE_WEB_ADDR > ${out}; sleep 30'` },
      undefined,
    );
    await waitFor(() => existsSync(out) && readFileSync(out, 'utf8').includes('\n'));
    expect(readFileSync(out, 'utf8').trim()).toBe('10.0.0.1:80,10.0.0.2:80');
  });

  it('after a daemon restart the old process of a cluster app is stopped, so it never runs twice', async () => {
    fx = await fixture();
    await fx.sup.cluster.apply('svc-a', { command: 'sleep 600' }, undefined);
    const first = await waitFor(() => fx!.sup.get('svc-a')?.['pid'] as number | undefined);
    await fx.sup.detach();
    const next = await fx.make();
    // Not stored: the new supervisor does not know it until the worker applies it again.
    expect(next.get('svc-a')).toBeUndefined();
    await waitFor(() => !isAlive(first), { timeoutMs: 15_000, what: 'the old process stopped' });
    expect(await next.cluster.apply('svc-a', { command: 'sleep 600' }, undefined)).toBe('started');
    await waitFor(() => next.get('svc-a')?.['state'] === 'running');
    expect(next.get('svc-a')?.['pid']).not.toBe(first);
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
