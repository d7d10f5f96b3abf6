// Paired A/B of the supervisor alone, in one process (no daemon, no REST, no fork): createSupervisor
// of another checkout (A) against this checkout's (B), both with an in-memory process runner, so
// the figures are svc's own work on the start and stop paths (validation, hooks, the durable
// write of the definition, the answer's view). register() of a new app and disable() alternate
// A, B / B, A so that load hits both alike.
//   AB_BASE=/tmp/ab-base N=400 npx node bench/supervisor-ab.ts
// An A/A run (AB_MINE=<a second checkout of the same revision>) gives the run-to-run spread.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface Sup {
  register(definition: unknown, owner: string): Promise<unknown>;
  disable(name: string): Promise<unknown>;
  detach(): Promise<void>;
}
type Exit = (info: { exitCode: number; spawnError: undefined }) => void;

const base = process.env['AB_BASE'] ?? '/tmp/ab-base';
const mine = process.env['AB_MINE'] ?? join(import.meta.dirname, '..');
const n = Number(process.env['N'] ?? 400);
const exits = new Map<number, Exit>();
let nextPid = 4_000_000; // no such process: nothing is ever signalled for real

/** Spawns nothing; a SIGTERM to a "group" is answered by its exit on the next turn. */
const fakeRunner = () => ({
  kind: 'inprocess',
  placesInCgroups: false,
  spawn: () => {
    const pid = nextPid++;
    let exit: Exit | undefined;
    exits.set(pid, (info) => exit?.(info));
    return { pid, onExit: (callback: Exit) => (exit = callback) };
  },
  killGroup: (pid: number) => {
    const exit = exits.get(pid);
    if (exit !== undefined) setImmediate(() => exit({ exitCode: -15, spawnError: undefined }));
    return true;
  },
  kill: () => true,
});

const dirs: string[] = [];
async function make(root: string): Promise<Sup> {
  const src = join(root, 'packages/daemon/src');
  const { createSupervisor } = (await import(join(src, 'supervisor/supervisor.ts'))) as {
    createSupervisor: (options: Record<string, unknown>) => Promise<Sup>;
  };
  const { silentLogger } = (await import(join(src, 'log/logger.ts'))) as { silentLogger: unknown };
  const { createSecretCrypter } = (await import(join(src, 'model/secret-crypter.ts'))) as {
    createSecretCrypter: (key: Buffer) => unknown;
  };
  const dir = mkdtempSync(join(tmpdir(), 'svc-sup-ab-'));
  dirs.push(dir);
  return createSupervisor({
    workDir: join(dir, 'work'),
    crypter: createSecretCrypter(Buffer.alloc(32, 7)),
    daemonUrl: 'https://127.0.0.1:1',
    logger: silentLogger,
    processKeySecret: Buffer.alloc(32, 9),
    stopGraceMs: 2000,
    runner: fakeRunner(),
  });
}

const sups = [await make(base), await make(mine)];
const register: [number[], number[]] = [[], []];
const disable: [number[], number[]] = [[], []];
for (let i = 0; i < 20; i++)
  for (const sup of sups) await sup.register({ name: `w${i}`, command: 'sleep 600' }, 'b');
for (let i = 0; i < n; i++) {
  const order = i % 2 === 0 ? [0, 1] : [1, 0];
  for (const k of order) {
    const t0 = performance.now();
    await sups[k]!.register({ name: `a${i}`, command: 'sleep 600' }, 'b');
    register[k]!.push(performance.now() - t0);
  }
  for (const k of order) {
    const t0 = performance.now();
    await sups[k]!.disable(`a${i}`);
    disable[k]!.push(performance.now() - t0);
  }
}
const q = (x: number[], p: number): number => [...x].sort((u, v) => u - v)[Math.floor(p * (x.length - 1))]!;
const ms = (x: number[]): string => `p50 ${q(x, 0.5).toFixed(3)} ms p90 ${q(x, 0.9).toFixed(3)}`;
for (const [name, [a, b]] of [
  ['register (new app)', register],
  ['disable', disable],
] as const) {
  const paired = a.map((v, i) => b[i]! / v).sort((u, v) => u - v);
  console.log(
    `${name.padEnd(20)} A ${ms(a)} | B ${ms(b)} | B/A of p50 ${(q(b, 0.5) / q(a, 0.5)).toFixed(2)}, median paired ratio ${paired[paired.length >> 1]!.toFixed(2)}`,
  );
}
for (const sup of sups) await sup.detach();
for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
