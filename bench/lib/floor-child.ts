// The raw-spawn floor: a bare Node process that spawns and stops children on request (IPC) and
// times each operation itself, so the figure is spawn() → 'spawn' event, kill() → 'exit'.
import { spawn, type ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';

export type FloorRequest =
  | { id: number; op: 'start'; name: string; argv: string[]; restart: boolean }
  | { id: number; op: 'stop' | 'remove'; name: string };
export interface FloorReply {
  id: number;
  pid?: number;
  ms?: number;
  error?: string;
}

const children = new Map<string, ChildProcess>();
const reply = (message: FloorReply): void => {
  process.send?.(message);
};

function launch(name: string, argv: string[], restartsLeft: number, onSpawn?: (child: ChildProcess, ms: number) => void): void {
  const t0 = performance.now();
  const child = spawn(argv[0] as string, argv.slice(1), { detached: true, stdio: 'ignore' });
  children.set(name, child);
  child.once('spawn', () => onSpawn?.(child, performance.now() - t0));
  child.once('error', () => undefined);
  child.once('exit', (code) => {
    if (children.get(name) === child && code !== 0 && code !== null && restartsLeft > 0) launch(name, argv, restartsLeft - 1);
  });
}

function killAll(): void {
  for (const child of children.values()) {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  children.clear();
}

process.on('message', (message: FloorRequest) => {
  if (message.op === 'start') {
    // The crash benchmark measures the first restart only (like svc, later restarts back off).
    launch(message.name, message.argv, message.restart ? 1 : 0, (child, ms) => reply({ id: message.id, pid: child.pid ?? 0, ms }));
    return;
  }
  const child = children.get(message.name);
  if (child === undefined || child.pid === undefined) {
    reply({ id: message.id, error: `no child ${message.name}` });
    return;
  }
  if (message.op === 'stop') {
    const t0 = performance.now();
    if (child.exitCode !== null || child.signalCode !== null) {
      reply({ id: message.id, ms: 0 });
      return;
    }
    child.once('exit', () => reply({ id: message.id, ms: performance.now() - t0 }));
    child.kill('SIGTERM');
    return;
  }
  children.delete(message.name);
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // gone
  }
  reply({ id: message.id });
});
process.on('disconnect', () => {
  killAll();
  process.exit(0);
});
process.send?.({ id: 0 });
