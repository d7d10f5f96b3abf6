// Cluster benchmarks (issue 13): a real etcd and real svcd nodes; simulated worker nodes are node
// reports written straight to etcd. Usage: npm run bench:cluster -- [--tasks 1000] [--nodes 100]
// [--ttl 3] [--failovers 3]. Talks to etcd through its JSON gateway (/v3/kv/…), so the bench needs
// no client library of its own. Prints the figures and writes bench/out/cluster.json.
//
//   A. placement: one svcd leader (IsWorkerNode false), N simulated workers; T tasks (replication
//      1, 1 MiB each) written in transactions of 100; time from the first write to the last
//      placement seen in the topology -> placements/s; then the latency of one more task written
//      alone to its placement (p50/p99 over 20).
//   B. failover: 3 svcd main nodes (SessionTTL = --ttl); kill -9 the leader; time to a new leader
//      (lowest election key of another node and its report saying leader: true).
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startEtcd, startTestDaemon, startTestIssuer, type TestDaemon, type TestEtcd } from '@svc/testkit';
import { now, summarize } from './lib/util.ts';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '1000' },
    nodes: { type: 'string', default: '100' },
    ttl: { type: 'string', default: '3' },
    failovers: { type: 'string', default: '3' },
  },
});
const TASKS = Number(values.tasks);
const NODES = Number(values.nodes);
const TTL = Number(values.ttl);
const FAILOVERS = Number(values.failovers);

const b64 = (text: string): string => Buffer.from(text).toString('base64');
const unb64 = (text: string): string => Buffer.from(text, 'base64').toString('utf8');
/** The range end of a prefix scan: the prefix with its last byte incremented. */
const prefixEnd = (prefix: string): string => {
  const bytes = Buffer.from(prefix);
  bytes[bytes.length - 1]! += 1;
  return bytes.toString('base64');
};

interface Kv {
  key: string;
  value: string;
  create_revision: string;
}

async function gateway(etcd: TestEtcd, path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${etcd.url}/v3/${path}`, { method: 'POST', body: JSON.stringify(body) });
  if (!response.ok) throw new Error(`etcd ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}

async function range(etcd: TestEtcd, prefix: string, extra: Record<string, unknown> = {}): Promise<Kv[]> {
  const result = await gateway(etcd, 'kv/range', {
    key: b64(prefix),
    range_end: prefixEnd(prefix),
    ...extra,
  });
  const kvs = (result['kvs'] as { key: string; value?: string; create_revision: string }[] | undefined) ?? [];
  return kvs.map((kv) => ({
    key: unb64(kv.key),
    value: unb64(kv.value ?? ''),
    create_revision: kv.create_revision,
  }));
}

async function putMany(etcd: TestEtcd, entries: readonly [string, string][]): Promise<void> {
  for (let i = 0; i < entries.length; i += 100) {
    await gateway(etcd, 'kv/txn', {
      success: entries
        .slice(i, i + 100)
        .map(([key, value]) => ({ request_put: { key: b64(key), value: b64(value) } })),
    });
  }
}

async function until<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function placements(etcd: TestEtcd): Promise<Set<string>> {
  const apps = new Set<string>();
  for (const kv of await range(etcd, 'svc/cluster/topology/'))
    for (const entry of JSON.parse(kv.value) as { app: string }[]) apps.add(entry.app);
  return apps;
}

async function leaderHost(etcd: TestEtcd): Promise<string | undefined> {
  const kvs = await range(etcd, 'svc/cluster/leader/', {
    sort_order: 'ASCEND',
    sort_target: 'CREATE',
    limit: 1,
  });
  const host = kvs[0]?.value;
  if (host === undefined) return undefined;
  const report = (await range(etcd, `svc/cluster/nodes/${host}`))[0];
  return report !== undefined && (JSON.parse(report.value) as { leader: boolean }).leader ? host : undefined;
}

async function startNode(
  etcd: TestEtcd,
  host: string,
  worker: boolean,
  issuer: Awaited<ReturnType<typeof startTestIssuer>>,
): Promise<TestDaemon> {
  return startTestDaemon({
    issuer,
    files: { 'config/config.yaml': `Registry:\n  IsMainNode: true\n  IsWorkerNode: ${worker}\n` },
    env: { SVC_HOST_NAME: host, SVC_REGISTRY_URL: etcd.url, SVC_REGISTRY_SESSION_TTL: String(TTL) },
  });
}

async function placementBench(): Promise<Record<string, number>> {
  const etcd = await startEtcd();
  const issuer = await startTestIssuer();
  let leader: TestDaemon | undefined;
  try {
    const report = (i: number): string =>
      JSON.stringify({
        svc: `https://10.0.${Math.floor(i / 250)}.${i % 250}:6058`,
        label: {
          HOST_NAME: `sim-${i}`,
          arch: 'x86_64',
          os_version: 'bench',
          WORKER: 'true',
          zone: `z${i % 4}`,
        },
        leader: false,
        resource: { cpu_cores: 8, mem_total_bytes: 64 * 1024 ** 3 },
      });
    await putMany(
      etcd,
      Array.from({ length: NODES }, (_, i) => [`svc/cluster/nodes/sim-${i}`, report(i)]),
    );
    leader = await startNode(etcd, 'bench-leader', false, issuer);
    await until('the leader', 30_000, () => leaderHost(etcd));

    const task = (name: string): string =>
      JSON.stringify({
        replication: 1,
        port: 0,
        memoryMB: 1,
        condition: {},
        content: { name, command: 'sleep 60' },
      });
    const names = Array.from({ length: TASKS }, (_, i) => `app-${i}`);
    const began = now();
    await putMany(
      etcd,
      names.map((name) => [`svc/cluster/tasks/${name}`, task(name)]),
    );
    const written = now();
    await until(`${TASKS} placements`, 120_000, async () =>
      (await placements(etcd)).size >= TASKS ? true : undefined,
    );
    const placed = now();

    const single: number[] = [];
    for (let i = 0; i < 20; i++) {
      const name = `single-${i}`;
      const start = now();
      await putMany(etcd, [[`svc/cluster/tasks/${name}`, task(name)]]);
      await until(name, 30_000, async () => ((await placements(etcd)).has(name) ? true : undefined));
      single.push(now() - start);
    }
    const s = summarize(single);
    return {
      tasks: TASKS,
      nodes: NODES,
      write_ms: written - began,
      all_placed_ms: placed - began,
      placements_per_s: TASKS / ((placed - began) / 1000),
      single_task_p50_ms: s.p50,
      single_task_p99_ms: s.p99,
    };
  } finally {
    await leader?.close();
    await issuer.close();
    await etcd.close();
  }
}

async function failoverBench(): Promise<Record<string, number>> {
  const etcd = await startEtcd();
  const issuer = await startTestIssuer();
  const nodes = new Map<string, TestDaemon>();
  try {
    for (const host of ['fo-a', 'fo-b', 'fo-c']) nodes.set(host, await startNode(etcd, host, true, issuer));
    const samples: number[] = [];
    for (let i = 0; i < FAILOVERS; i++) {
      const old = await until('a leader', 30_000, () => leaderHost(etcd));
      const killedAt = now();
      await nodes.get(old)!.kill();
      await until('a new leader', 60_000, async () => {
        const host = await leaderHost(etcd);
        return host !== undefined && host !== old ? host : undefined;
      });
      samples.push(now() - killedAt);
      await nodes.get(old)!.close();
      nodes.set(old, await startNode(etcd, old, true, issuer));
    }
    const s = summarize(samples);
    return { ttl_s: TTL, failovers: samples.length, failover_p50_ms: s.p50, failover_max_ms: s.max };
  } finally {
    await Promise.all([...nodes.values()].map((node) => node.close()));
    await issuer.close();
    await etcd.close();
  }
}

const placement = await placementBench();
process.stdout.write(`placement: ${JSON.stringify(placement)}\n`);
const failover = await failoverBench();
process.stdout.write(`failover: ${JSON.stringify(failover)}\n`);
const out = join(import.meta.dirname, 'out');
await mkdir(out, { recursive: true });
await writeFile(
  join(out, 'cluster.json'),
  JSON.stringify(
    { date: new Date().toISOString(), cpus: os.cpus().length, load: os.loadavg(), placement, failover },
    null,
    2,
  ) + '\n',
);
