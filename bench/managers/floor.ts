// The raw floor as a Manager: a bare Node child that spawns (lib/floor-child.ts) and times itself.
import { fork } from 'node:child_process';
import { join } from 'node:path';
import type { FloorReply, FloorRequest } from '../lib/floor-child.ts';
import { killGroup, onCleanup } from '../lib/util.ts';
import type { AppSpec, Manager, Timed } from './types.ts';

type Without<T> = T extends unknown ? Omit<T, 'id'> : never;

export async function startFloor(): Promise<Manager> {
  const child = fork(join(import.meta.dirname, '../lib/floor-child.ts'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiters = new Map<number, (reply: FloorReply) => void>();
  let nextId = 1;
  const pids = new Map<string, number>();
  child.on('message', (reply: FloorReply) => {
    const waiter = waiters.get(reply.id);
    waiters.delete(reply.id);
    waiter?.(reply);
  });
  await new Promise<void>((resolve, reject) => {
    waiters.set(0, () => resolve());
    child.once('error', reject);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ask = (request: Without<FloorRequest>): Promise<FloorReply> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      waiters.set(id, (reply) => (reply.error === undefined ? resolve(reply) : reject(new Error(reply.error))));
      child.send({ ...request, id });
    });
  const cleanup = onCleanup('floor child', async () => {
    child.disconnect();
    await Promise.race([exited, new Promise((r) => setTimeout(r, 2000))]);
    killGroup(child.pid!, 'SIGKILL');
  });
  return {
    kind: 'floor',
    version: `node ${process.version} child_process.spawn`,
    pid: child.pid!,
    async prepare() {},
    async start(spec: AppSpec): Promise<Timed<void>> {
      const reply = await ask({ op: 'start', name: spec.name, argv: spec.argv, restart: spec.restart });
      pids.set(spec.name, reply.pid ?? 0);
      return { value: undefined, innerMs: reply.ms ?? Number.NaN };
    },
    async pidOf(name) {
      return pids.get(name) ?? 0;
    },
    async stop(name): Promise<Timed<void>> {
      const reply = await ask({ op: 'stop', name });
      return { value: undefined, innerMs: reply.ms ?? Number.NaN };
    },
    async remove(name) {
      pids.delete(name);
      await ask({ op: 'remove', name }).catch(() => undefined);
    },
    close: cleanup,
  };
}
