// Paired A/B of the durable save alone (no daemon, no REST, no spawn): AppStore of another checkout
// (A, as it is configured there) against this checkout's journaled AppStore (B), saving existing
// definitions one at a time (what `disable`/`enable` write), alternated A, B, A, B…
//   AB_BASE=/tmp/ab-base N=200 npx node bench/store-ab.ts
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppStore as StoreB, createSecretCrypter, parseAppDefinition } from '@svc/daemon';

interface Store {
  save(def: ReturnType<typeof parseAppDefinition>): Promise<void>;
  loadAll(): Promise<unknown>;
  close(): Promise<void>;
}
type StoreClass = new (
  dir: string,
  crypter: ReturnType<typeof createSecretCrypter>,
  options?: object,
) => Store;

const base = process.env['AB_BASE'] ?? '/tmp/ab-base';
const StoreA = (
  (await import(join(base, 'packages/daemon/src/supervisor/app-store.ts'))) as { AppStore: StoreClass }
).AppStore;
const crypter = createSecretCrypter(randomBytes(32));
const root = await mkdtemp(join(tmpdir(), 'svc-store-ab-'));
const a: Store = new StoreA(join(root, 'a'), crypter, { journal: true }); // ignored where unknown
const b: Store = new StoreB(join(root, 'b'), crypter, { journal: true });
await a.loadAll();
await b.loadAll();
const n = Number(process.env['N'] ?? 200);
const gapMs = Number(process.env['GAP_MS'] ?? 2); // between saves, like requests that come one by one
const defs = Array.from({ length: 20 }, (_, i) =>
  parseAppDefinition({ name: `app${i}`, command: 'sleep 600' }, { now: Date.now() }),
);
for (const d of defs) {
  await a.save(d);
  await b.save(d);
}
const ta: number[] = [];
const tb: number[] = [];
for (let i = 0; i < n; i++) {
  const def = { ...defs[i % defs.length]!, enabled: i % 2 === 0 };
  for (const [store, out] of [
    [a, ta],
    [b, tb],
  ] as const) {
    const t0 = performance.now();
    await store.save(def);
    out.push(performance.now() - t0);
    await new Promise((resolve) => setTimeout(resolve, gapMs));
  }
}
const q = (x: number[], p: number): number => [...x].sort((u, v) => u - v)[Math.floor(p * (x.length - 1))]!;
const paired = ta.map((v, i) => tb[i]! / v).sort((u, v) => u - v);
process.stdout.write(
  `load ${loadavg()[0]!.toFixed(2)}, n=${n}: A p50 ${q(ta, 0.5).toFixed(3)} ms p90 ${q(ta, 0.9).toFixed(3)} | ` +
    `B p50 ${q(tb, 0.5).toFixed(3)} ms p90 ${q(tb, 0.9).toFixed(3)} | B/A of p50 ${(q(tb, 0.5) / q(ta, 0.5)).toFixed(2)}, ` +
    `median paired ratio ${paired[paired.length >> 1]!.toFixed(2)}\n`,
);
await a.close();
await b.close();
await rm(root, { recursive: true, force: true });
