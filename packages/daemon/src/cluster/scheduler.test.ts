import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ClusterTask, NodeReport, Topology } from './records.ts';
import {
  diffTopology,
  formatScheduleTime,
  matchesCondition,
  matchesWildcard,
  schedule,
} from './scheduler.ts';

const MIB = 1024 * 1024;
const NOW = new Date('2026-11-24T04:30:05.123Z');
const LATER = new Date('2026-11-24T05:00:00.000Z');

function node(host: string, memMB: number, labels: Record<string, string> = {}, worker = true): NodeReport {
  return {
    svc: `https://127.0.0.1:1/${host}`,
    label: {
      HOST_NAME: host,
      arch: 'x86_64',
      os_version: 'debian',
      WORKER: worker ? 'true' : 'false',
      ...labels,
    },
    leader: false,
    resource: { cpu_cores: 2, mem_total_bytes: memMB * MIB },
  };
}

function task(replication: number, memoryMB = 0, condition: Record<string, string> = {}): ClusterTask {
  return { replication, port: 0, memoryMB, condition, content: { name: 'x', command: 'sleep 60' } };
}

// ---- generated clusters ----------------------------------------------------------------------
const HOSTS = ['n0', 'n1', 'n2', 'n3', 'n4', 'n5', 'n6', 'n7', 'web-1', 'db-2'];
const APPS = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];

const nodeArb = fc
  .record({
    memMB: fc.integer({ min: 0, max: 8192 }),
    zone: fc.constantFrom('eu-1', 'eu-2', 'us-1'),
    gpu: fc.option(fc.constantFrom('yes', 'no'), { nil: undefined }),
    worker: fc.oneof(
      { weight: 6, arbitrary: fc.constant(true) },
      { weight: 1, arbitrary: fc.constant(false) },
    ),
  })
  .map(
    ({ memMB, zone, gpu, worker }) =>
      (host: string) =>
        node(host, memMB, gpu === undefined ? { zone } : { zone, gpu }, worker),
  );

const conditionArb = fc.dictionary(
  fc.constantFrom('zone', 'gpu', 'HOST_NAME', 'arch', 'missing'),
  fc.constantFrom('eu-1', 'eu-?', 'eu-*', '*', 'us-1', 'yes', 'n?', 'n*', 'web-*', 'x86_64', '*6*', '?'),
  { maxKeys: 2 },
);

const taskArb: fc.Arbitrary<ClusterTask> = fc.record({
  replication: fc.integer({ min: 0, max: 6 }),
  port: fc.constantFrom(0, 8080),
  memoryMB: fc.constantFrom(0, 1, 64, 512, 1024, 3000),
  condition: fc.oneof({ weight: 2, arbitrary: fc.constant({}) }, { weight: 3, arbitrary: conditionArb }),
  content: fc.constant({ command: 'sleep 60' }),
});

const nodesArb = fc
  .uniqueArray(fc.constantFrom(...HOSTS), { minLength: 0, maxLength: HOSTS.length })
  .chain((hosts) =>
    fc.tuple(fc.constant(hosts), fc.array(nodeArb, { minLength: hosts.length, maxLength: hosts.length })),
  )
  .map(([hosts, makers]) => Object.fromEntries(hosts.map((host, i) => [host, makers[i]!(host)])));

const tasksArb = fc.dictionary(fc.constantFrom(...APPS), taskArb, { maxKeys: APPS.length });

const timeArb = fc
  .integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2026, 11, 31) })
  .map((ms) => formatScheduleTime(new Date(ms)));

/** Any current topology: live and dead hosts, known and unknown apps, duplicates. */
const currentArb: fc.Arbitrary<Topology> = fc.dictionary(
  fc.constantFrom(...HOSTS, 'gone-1'),
  fc.array(fc.record({ app: fc.constantFrom(...APPS, 'unknown'), schedule_time: timeArb }), { maxLength: 5 }),
  { maxKeys: 6 },
);

const clusterArb = fc.record({ tasks: tasksArb, nodes: nodesArb, current: currentArb });

function usedBytes(tasks: Record<string, ClusterTask>, entries: readonly { app: string }[]): number {
  return entries.reduce((sum, entry) => sum + (tasks[entry.app]?.memoryMB ?? 0) * MIB, 0);
}

function replicaCounts(topology: Topology): Map<string, number> {
  const counts = new Map<string, number>();
  for (const entries of Object.values(topology)) {
    for (const entry of entries) counts.set(entry.app, (counts.get(entry.app) ?? 0) + 1);
  }
  return counts;
}

function eligible(
  tasks: Record<string, ClusterTask>,
  nodes: Record<string, NodeReport>,
  app: string,
): string[] {
  const t = tasks[app]!;
  return Object.entries(nodes)
    .filter(
      ([host, report]) => report.label['WORKER'] === 'true' && matchesCondition(t.condition, host, report),
    )
    .map(([host]) => host);
}

function shuffled<T extends object>(record: T, seed: number): T {
  const entries = Object.entries(record);
  entries.sort((a, b) => ((a[0].charCodeAt(0) * seed) % 7) - ((b[0].charCodeAt(0) * seed) % 7));
  return Object.fromEntries(entries.reverse()) as T;
}

describe('schedule (properties over generated clusters)', () => {
  it('never puts more memory on a node than it has', () => {
    fc.assert(
      fc.property(clusterArb, ({ tasks, nodes, current }) => {
        const next = schedule({ tasks, nodes, current, now: NOW });
        for (const [host, entries] of Object.entries(next)) {
          expect(usedBytes(tasks, entries)).toBeLessThanOrEqual(nodes[host]!.resource.mem_total_bytes);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('places only existing tasks on live workers whose labels honour the condition', () => {
    fc.assert(
      fc.property(clusterArb, ({ tasks, nodes, current }) => {
        const next = schedule({ tasks, nodes, current, now: NOW });
        for (const [host, entries] of Object.entries(next)) {
          const report = nodes[host];
          expect(report).toBeDefined();
          expect(report!.label['WORKER']).toBe('true');
          expect(entries.length).toBeGreaterThan(0);
          for (const entry of entries) {
            const t = tasks[entry.app];
            expect(t).toBeDefined();
            expect(matchesCondition(t!.condition, host, report!)).toBe(true);
          }
        }
      }),
      { numRuns: 400 },
    );
  });

  it('spreads replicas over distinct nodes and never exceeds replication (0 = none)', () => {
    fc.assert(
      fc.property(clusterArb, ({ tasks, nodes, current }) => {
        const next = schedule({ tasks, nodes, current, now: NOW });
        for (const entries of Object.values(next)) {
          const apps = entries.map((entry) => entry.app);
          expect(new Set(apps).size).toBe(apps.length);
        }
        for (const [app, count] of replicaCounts(next)) {
          expect(count).toBeLessThanOrEqual(tasks[app]!.replication);
          expect(tasks[app]!.replication).toBeGreaterThan(0);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('meets replication when capacity allows: min(replication, eligible nodes) replicas', () => {
    const roomyNodesArb = nodesArb.map((nodes) =>
      Object.fromEntries(
        Object.entries(nodes).map(([host, report]) => [
          host,
          { ...report, resource: { ...report.resource, mem_total_bytes: 64 * 1024 * MIB } },
        ]),
      ),
    );
    fc.assert(
      fc.property(tasksArb, roomyNodesArb, currentArb, (tasks, nodes, current) => {
        const next = schedule({ tasks, nodes, current, now: NOW });
        const counts = replicaCounts(next);
        for (const [app, t] of Object.entries(tasks)) {
          expect(counts.get(app) ?? 0).toBe(Math.min(t.replication, eligible(tasks, nodes, app).length));
        }
      }),
      { numRuns: 400 },
    );
  });

  it('is stable: scheduling its own result again changes nothing (not even schedule_time)', () => {
    fc.assert(
      fc.property(clusterArb, ({ tasks, nodes, current }) => {
        const next = schedule({ tasks, nodes, current, now: NOW });
        const again = schedule({ tasks, nodes, current: next, now: LATER });
        expect(again).toEqual(next);
        expect(diffTopology(next, again)).toEqual({ put: {}, remove: [] });
      }),
      { numRuns: 400 },
    );
  });

  it('never moves a placement when a node or a task is added', () => {
    fc.assert(
      fc.property(clusterArb, taskArb, nodeArb, ({ tasks, nodes }, extraTask, extraNode) => {
        const before = schedule({ tasks, nodes, current: {}, now: NOW });
        const after = schedule({
          tasks: { ...tasks, extra: extraTask },
          nodes: { ...nodes, 'new-node': extraNode('new-node') },
          current: before,
          now: LATER,
        });
        for (const [host, entries] of Object.entries(before)) {
          for (const entry of entries) expect(after[host]).toContainEqual(entry);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('keeps the replicas on surviving nodes when a node dies and replaces the lost ones', () => {
    fc.assert(
      fc.property(clusterArb, fc.nat(), ({ tasks, nodes }, pick) => {
        const hosts = Object.keys(nodes);
        fc.pre(hosts.length > 0);
        const dead = hosts[pick % hosts.length]!;
        const before = schedule({ tasks, nodes, current: {}, now: NOW });
        const { [dead]: _gone, ...survivors } = nodes;
        const after = schedule({ tasks, nodes: survivors, current: before, now: LATER });
        expect(after[dead]).toBeUndefined();
        for (const [host, entries] of Object.entries(before)) {
          if (host === dead) continue;
          for (const entry of entries) expect(after[host]).toContainEqual(entry);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('is deterministic and independent of the order of its inputs', () => {
    fc.assert(
      fc.property(clusterArb, fc.integer({ min: 1, max: 97 }), ({ tasks, nodes, current }, seed) => {
        const a = schedule({ tasks, nodes, current, now: NOW });
        const b = schedule({
          tasks: shuffled(tasks, seed),
          nodes: shuffled(nodes, seed),
          current: shuffled(current, seed),
          now: NOW,
        });
        expect(JSON.stringify(b)).toBe(JSON.stringify(a));
      }),
      { numRuns: 300 },
    );
  });
});

describe('schedule (examples)', () => {
  it('places new replicas with now as schedule_time, least loaded nodes first', () => {
    const next = schedule({
      tasks: { web: task(2, 100), db: task(1, 100) },
      nodes: { n1: node('n1', 1000), n2: node('n2', 1000), n3: node('n3', 1000) },
      current: {},
      now: NOW,
    });
    expect(next).toEqual({
      n1: [{ app: 'db', schedule_time: '2026-11-24 04:30:05+00' }],
      n2: [{ app: 'web', schedule_time: '2026-11-24 04:30:05+00' }],
      n3: [{ app: 'web', schedule_time: '2026-11-24 04:30:05+00' }],
    });
  });

  it('keeps the oldest replicas when replication shrinks and drops the host key when empty', () => {
    const current: Topology = {
      n1: [{ app: 'web', schedule_time: '2026-11-24 03:00:00+00' }],
      n2: [{ app: 'web', schedule_time: '2026-11-24 01:00:00+00' }],
    };
    const next = schedule({
      tasks: { web: task(1) },
      nodes: { n1: node('n1', 10), n2: node('n2', 10) },
      current,
      now: NOW,
    });
    expect(next).toEqual({ n2: [{ app: 'web', schedule_time: '2026-11-24 01:00:00+00' }] });
    expect(diffTopology(current, next)).toEqual({ put: {}, remove: ['n1'] });
  });

  it('replication 0 places nothing; a deleted task is removed everywhere', () => {
    const current: Topology = {
      n1: [
        { app: 'web', schedule_time: '2026-11-24 03:00:00+00' },
        { app: 'old', schedule_time: 'x' },
      ],
    };
    const next = schedule({ tasks: { web: task(0) }, nodes: { n1: node('n1', 10) }, current, now: NOW });
    expect(next).toEqual({});
  });

  it('moves a replica off a node that no longer matches or no longer has room', () => {
    const current: Topology = {
      n1: [{ app: 'a', schedule_time: '2026-11-24 01:00:00+00' }],
      n2: [{ app: 'b', schedule_time: '2026-11-24 01:00:00+00' }],
    };
    const next = schedule({
      tasks: { a: task(1, 0, { zone: 'eu-*' }), b: task(1, 600) },
      nodes: {
        n1: node('n1', 1000, { zone: 'us-1' }),
        n2: node('n2', 500, { zone: 'eu-1' }),
        n3: node('n3', 1000, { zone: 'eu-2' }),
      },
      current,
      now: NOW,
    });
    expect(next['n1']).toEqual([{ app: 'b', schedule_time: '2026-11-24 04:30:05+00' }]);
    expect(next['n2']).toBeUndefined();
    expect(next['n3']).toEqual([{ app: 'a', schedule_time: '2026-11-24 04:30:05+00' }]);
  });

  it('never places on non-workers, and leaves a task short when nothing fits', () => {
    const next = schedule({
      tasks: { big: task(3, 2048) },
      nodes: { main: node('main', 1 << 20, {}, false), w1: node('w1', 4096), w2: node('w2', 1024) },
      current: {},
      now: NOW,
    });
    expect(Object.keys(next)).toEqual(['w1']);
  });

  it('treats hostile host and app names as plain keys', () => {
    const next = schedule({
      tasks: { ['__proto__']: task(1), constructor: task(1) },
      nodes: { ['__proto__']: node('__proto__', 10) },
      current: JSON.parse('{"__proto__":[{"app":"toString","schedule_time":"x"}]}') as Topology,
      now: NOW,
    });
    expect(Object.getPrototypeOf(next)).toBe(Object.prototype);
    expect(Object.keys(next)).toEqual(['__proto__']);
    expect(next['__proto__']?.map((entry) => entry.app)).toEqual(['__proto__', 'constructor']);
  });

  it('places 1,000 tasks on 100 nodes in well under 100 ms', () => {
    const nodes: Record<string, NodeReport> = {};
    for (let i = 0; i < 100; i++) nodes[`node-${i}`] = node(`node-${i}`, 64 * 1024, { zone: `z${i % 4}` });
    const tasks: Record<string, ClusterTask> = {};
    for (let i = 0; i < 1000; i++)
      tasks[`app-${i}`] = task(
        1 + (i % 3),
        16 + (i % 5) * 8,
        i % 2 === 0 ? { zone: 'z?' } : { zone: `z${i % 4}` },
      );
    const timings: number[] = [];
    let next: Topology = {};
    for (let run = 0; run < 3; run++) {
      const started = performance.now();
      next = schedule({ tasks, nodes, current: {}, now: NOW });
      timings.push(performance.now() - started);
    }
    expect(replicaCounts(next).size).toBe(1000);
    expect(Math.min(...timings)).toBeLessThan(100);
    const started = performance.now();
    expect(schedule({ tasks, nodes, current: next, now: LATER })).toEqual(next);
    expect(performance.now() - started).toBeLessThan(200);
  });
});

describe('matchesWildcard', () => {
  it.each([
    ['eu-*', 'eu-west', true],
    ['eu-*', 'us-west', false],
    ['*', '', true],
    ['?', '', false],
    ['n?', 'n1', true],
    ['n?', 'n12', false],
    ['*a*b', 'xxaxxb', true],
    ['*a*b', 'xxaxxbc', false],
    ['a.c', 'abc', false],
    ['[ab]', 'a', false],
    ['', '', true],
  ])('%j ~ %j = %s', (pattern, value, expected) => {
    expect(matchesWildcard(pattern, value)).toBe(expected);
  });

  it('stays fast on patterns that make regex engines backtrack', () => {
    const started = performance.now();
    expect(matchesWildcard('*a'.repeat(50) + 'b', 'a'.repeat(5000))).toBe(false);
    expect(performance.now() - started).toBeLessThan(500);
  });

  it('agrees with an anchored regular expression on generated inputs', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[ab*?]{0,8}$/), fc.stringMatching(/^[ab]{0,10}$/), (pattern, value) => {
        const regex = new RegExp(`^${pattern.replaceAll('*', '.*').replaceAll('?', '.')}$`, 's');
        expect(matchesWildcard(pattern, value)).toBe(regex.test(value));
      }),
    );
  });
});

describe('formatScheduleTime', () => {
  it('is YYYY-MM-DD HH:MM:SS+00 in UTC', () => {
    expect(formatScheduleTime(new Date('2026-01-02T03:04:05.999Z'))).toBe('2026-01-02 03:04:05+00');
  });
});
