// Paired A/B of the request paths of two svcd builds on a shared, noisy machine (the start/stop
// paths are bench/ab.ts): A is a checkout of another revision (its testkit starts its own bundle),
// B this checkout. Every round runs one short closed-loop burst against A, then against B (the
// order alternates per round), so load from other jobs hits both alike. Per figure it prints the
// median rate of each side, B/A of the medians, the median of the per-round B/A ratios, and the
// daemon's CPU time per operation (utime + stime of svcd from /proc, summed over every burst), the
// figure least disturbed by other load.
//   git archive <rev> | tar -x -C /tmp/ab-base && ln -s "$PWD/node_modules" /tmp/ab-base/node_modules
//   (cd /tmp/ab-base && node packages/platform/build/build.js)
//   AB_BASE=/tmp/ab-base ROUNDS=12 MS=600 ONLY=tasks,tcp,wss,rest,forward npx node bench/ab-rpc.ts
// tasks: POST /svc/app/worker/task over TLS TCP, 8 in flight, worker lib/task-worker.ts (the same
// file for both sides; WORKER_TRANSPORT=tcp|rest|fetch, default tcp); tcp/wss/rest: GET /svc/self,
// 64 in flight (REST: 64 keep-alive connections); forward: GET /svc/self through a gateway svcd
// with X-Target-Host, 64 in flight on one TCP connection (CPU per op: gateway and target summed).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestDaemon, startTestIssuer, tcpClient, wsClient, type TestDaemon } from '@svc/testkit';
import { keepAliveRest, ok } from './lib/rest.ts';
import { closedLoop, cpuMs, summarize } from './lib/util.ts';
import { commandLine } from './managers/types.ts';

type Start = typeof startTestDaemon;
type Issuer = typeof startTestIssuer;
type Call = () => Promise<void>;
const base = process.env['AB_BASE'] ?? '/tmp/ab-base';
const kitA = (await import(join(base, 'packages/testkit/src/index.ts'))) as {
  startTestDaemon: Start;
  startTestIssuer: Issuer;
};
const rounds = Number(process.env['ROUNDS'] ?? 12);
const ms = Number(process.env['MS'] ?? 600);
const only = (process.env['ONLY'] ?? 'tasks,tcp,wss,rest,forward').split(',');
const workerTransport = process.env['WORKER_TRANSPORT'] ?? 'tcp';
const WORKER = join(import.meta.dirname, 'lib/task-worker.ts');
/**
 * PROFILE_B=<dir>: B's daemons run under --cpu-prof (PROFILE_KIND=heap: --heap-prof, sampled
 * allocations); the profiles are written when they stop.
 */
const profileB = process.env['PROFILE_B'];
const profiled = (start: Start): Start =>
  profileB === undefined
    ? start
    : (options = {}) =>
        start({
          ...options,
          env: {
            ...options.env,
            NODE_OPTIONS:
              process.env['PROFILE_KIND'] === 'heap'
                ? `--heap-prof --heap-prof-interval=16384 --heap-prof-dir=${profileB}`
                : `--cpu-prof --cpu-prof-dir=${profileB}`,
          },
        });

interface Side {
  call: Call;
  inFlight: number;
  pids: number[];
  close: () => Promise<void>;
}

async function tasksSide(start: Start): Promise<Side> {
  const daemon = await start({});
  const token = await daemon.token('admin');
  const rest = keepAliveRest(daemon.restUrl, daemon.ca, token);
  ok(
    await rest.call('PUT', '/svc/app/worker', {
      command: commandLine([process.execPath, WORKER]),
      behavior: { exit: 'standby' },
      env: {
        NODE_EXTRA_CA_CERTS: join(daemon.workDir, 'ssl', 'ca.pem'),
        WORKER_CONCURRENCY: '8',
        WORKER_TRANSPORT: workerTransport,
        WORKER_TCP_PORT: String(daemon.tcpPort),
      },
    }),
    'PUT worker',
  );
  rest.close();
  const client = await tcpClient('127.0.0.1', daemon.tcpPort, daemon.ca);
  let seq = 0;
  return {
    inFlight: 8,
    pids: [daemon.pid],
    call: async () => {
      const payload = `t${seq++}`;
      const r = await client.call('POST', '/svc/app/worker/task', {
        token,
        rawBody: payload,
        headers: { 'content-type': 'text/plain' },
      });
      if (r.status !== 200 || Buffer.from(r.body).toString('utf8') !== payload)
        throw new Error(`task: HTTP ${r.status} ${Buffer.from(r.body).toString('utf8').slice(0, 200)}`);
    },
    close: async () => {
      await client.close();
      await daemon.close();
    },
  };
}

async function selfSide(start: Start, transport: 'tcp' | 'wss' | 'rest'): Promise<Side> {
  const daemon = await start({});
  const token = await daemon.token('admin');
  if (transport === 'rest') {
    const rest = keepAliveRest(daemon.restUrl, daemon.ca, token, 64);
    return {
      inFlight: 64,
      pids: [daemon.pid],
      call: async () => void ok(await rest.call('GET', '/svc/self'), 'GET /svc/self'),
      close: async () => {
        rest.close();
        await daemon.close();
      },
    };
  }
  const client =
    transport === 'tcp'
      ? await tcpClient('127.0.0.1', daemon.tcpPort, daemon.ca)
      : await wsClient(daemon.restUrl, daemon.ca, token);
  return {
    inFlight: 64,
    pids: [daemon.pid],
    call: async () => {
      const r = await client.call('GET', '/svc/self', { token });
      if (r.status !== 200) throw new Error(`GET /svc/self: HTTP ${r.status}`);
    },
    close: async () => {
      await client.close();
      await daemon.close();
    },
  };
}

async function forwardSide(start: Start, issuerOf: Issuer): Promise<Side> {
  const issuer = await issuerOf();
  const target: TestDaemon = await start({ issuer, env: { SVC_HOST_NAME: 'ab-target' } });
  const address = `127.0.0.1:${target.tcpPort}`;
  const gateway: TestDaemon = await start({
    issuer,
    tlsFrom: target,
    env: { SVC_HOST_NAME: 'ab-gateway', SVC_FORWARD_TARGETS: address },
  });
  const token = await target.token('admin');
  const client = await tcpClient('127.0.0.1', gateway.tcpPort, gateway.ca);
  return {
    inFlight: 64,
    pids: [gateway.pid, target.pid],
    call: async () => {
      const r = await client.call('GET', '/svc/self', { token, headers: { 'x-target-host': address } });
      if (r.status !== 200) throw new Error(`forwarded GET /svc/self: HTTP ${r.status} ${r.text()}`);
    },
    close: async () => {
      await client.close();
      await gateway.close();
      await target.close();
      await issuer.close();
    },
  };
}

const figures: Record<string, (start: Start, issuer: Issuer) => Promise<Side>> = {
  tasks: (start) => tasksSide(start),
  tcp: (start) => selfSide(start, 'tcp'),
  wss: (start) => selfSide(start, 'wss'),
  rest: (start) => selfSide(start, 'rest'),
  forward: (start, issuer) => forwardSide(start, issuer),
};

const load = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ')[0]!;
console.log(`A = ${base}, B = this checkout; ${rounds} rounds of ${ms} ms per side; load ${load()}`);
for (const name of only) {
  const make = figures[name];
  if (make === undefined) throw new Error(`unknown figure ${name}`);
  const sides = [
    await make(kitA.startTestDaemon, kitA.startTestIssuer),
    await make(profiled(startTestDaemon), startTestIssuer),
  ];
  try {
    const rates: [number[], number[]] = [[], []];
    const latencies: [number[], number[]] = [[], []];
    const cpu = [0, 0];
    const ops = [0, 0];
    for (let w = 0; w < 3; w++) for (const side of sides) await closedLoop(side.call, side.inFlight, ms); // warm-up (JIT)
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const i of order) {
        const side = sides[i]!;
        const before = side.pids.reduce((sum, pid) => sum + cpuMs(pid), 0);
        const burst = await closedLoop(side.call, side.inFlight, ms);
        cpu[i]! += side.pids.reduce((sum, pid) => sum + cpuMs(pid), 0) - before;
        ops[i]! += burst.samples.length;
        rates[i]!.push(burst.rate);
        latencies[i]!.push(...burst.samples);
      }
    }
    const median = (values: number[]): number => [...values].sort((a, b) => a - b)[values.length >> 1]!;
    const paired = median(rates[0].map((a, j) => rates[1][j]! / a));
    const [la, lb] = [summarize(latencies[0]), summarize(latencies[1])];
    const perOp = (i: number): string => `${((cpu[i]! * 1000) / ops[i]!).toFixed(0)} µs`;
    console.log(
      `${name.padEnd(8)} A ${median(rates[0]).toFixed(0)}/s  B ${median(rates[1]).toFixed(0)}/s  ` +
        `B/A of medians ${(median(rates[1]) / median(rates[0])).toFixed(2)}  median paired ${paired.toFixed(2)}  ` +
        `p50/p99 A ${la.p50.toFixed(2)}/${la.p99.toFixed(2)} ms B ${lb.p50.toFixed(2)}/${lb.p99.toFixed(2)} ms  ` +
        `svcd CPU per op A ${perOp(0)} B ${perOp(1)} (load ${load()})`,
    );
  } finally {
    for (const side of sides) await side.close();
  }
}
