// Figure 11: the worker task loop. A managed worker (lib/task-worker.ts: 8 loops of @svc/client's
// runWorker sharing one TLS TCP connection, with its injected process key) echoes every task; a
// client POSTs /svc/app/worker/task over TLS TCP and over REST (keep-alive): sequential round trips
// (p50/p99), then tasks/s with 8 in flight, with svcd's CPU time per task; last, the TCP figure
// again with the worker fetching over HTTPS with the global fetch (the worker of earlier runs).
// No peer has a task loop; the floor is a bare HTTPS / TLS TCP echo (lib/floor-server.ts, one
// client → server → response hop, svcd's certificate), where svc makes three hops (client → svcd,
// svcd → worker's pending GET, worker's PUT → svcd → client).
import { fork } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tcpClient } from '@svc/testkit';
import { keepAliveRest, ok } from './lib/rest.ts';
import { latencyRow, type Benchmark, type Figure, type Row } from './lib/report.ts';
import { closedLoop, cpuMs, killGroup, log, onCleanup, sequential, summarize } from './lib/util.ts';
import { startSvc } from './managers/svc.ts';
import { commandLine } from './managers/types.ts';

const WORKER = join(import.meta.dirname, 'lib/task-worker.ts');
type Call = () => Promise<void>;

function check(status: number, body: Buffer | Uint8Array, expected: string | undefined, what: string): void {
  if (status !== 200)
    throw new Error(`${what}: HTTP ${status} ${Buffer.from(body).toString('utf8').slice(0, 200)}`);
  if (expected !== undefined && Buffer.from(body).toString('utf8') !== expected)
    throw new Error(`${what}: unexpected result`);
}

export const tasksBenchmark: Benchmark = {
  name: 'tasks',
  description:
    'task round trip client → svcd → managed worker → client over TCP and REST, sequential and 8 in flight, vs a bare HTTPS/TLS echo',
  async run(ctx) {
    const count = ctx.quick ? 300 : 2000;
    const ms = ctx.quick ? 1000 : 3000;
    const inFlight = 8;
    const env = ctx.svcEnv();
    const svc = await startSvc(env === undefined ? {} : { env });
    const dir = await mkdtemp(join(tmpdir(), 'svc-bench-task-floor-'));
    const closers: (() => Promise<void>)[] = [];
    const latency: Row[] = [];
    const rates: Row[] = [];
    try {
      const registerWorker = async (transport: 'tcp' | 'fetch'): Promise<void> => {
        ok(
          await svc.rest.call('PUT', '/svc/app/worker', {
            command: commandLine([process.execPath, WORKER]),
            behavior: { exit: 'standby' },
            env: {
              NODE_EXTRA_CA_CERTS: join(svc.daemon.workDir, 'ssl', 'ca.pem'),
              WORKER_CONCURRENCY: String(inFlight),
              WORKER_TRANSPORT: transport,
              WORKER_TCP_PORT: String(svc.daemon.tcpPort),
            },
          }),
          'PUT worker',
        );
      };
      await registerWorker('tcp');
      const floorBody = 'result';
      await writeFile(join(dir, 'body.txt'), floorBody);
      const ssl = join(svc.daemon.workDir, 'ssl');
      const server = fork(
        join(import.meta.dirname, 'lib/floor-server.ts'),
        [join(ssl, 'server-key.pem'), join(ssl, 'server.pem'), join(dir, 'body.txt')],
        {
          stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        },
      );
      closers.push(
        onCleanup('floor echo server', () => {
          server.disconnect();
          killGroup(server.pid!);
        }),
      );
      const ports = await new Promise<{ https: number; tcp: number }>((resolve, reject) => {
        server.once('message', (m) => resolve(m as { https: number; tcp: number }));
        server.once('exit', (code) => reject(new Error(`floor server exited with ${code}`)));
      });
      const token = svc.token;
      const path = '/svc/app/worker/task';
      let seq = 0;
      const tcpCall = async (port: number, svcSide: boolean): Promise<Call> => {
        const c = await tcpClient('127.0.0.1', port, svc.daemon.ca);
        closers.push(() => c.close());
        return async () => {
          const payload = `t${seq++}`;
          const r = await c.call('POST', path, {
            token,
            rawBody: payload,
            headers: { 'content-type': 'text/plain' },
          });
          check(r.status, r.body, svcSide ? payload : undefined, 'TCP task');
        };
      };
      const restCall = (base: string, sockets: number, svcSide: boolean): Call => {
        const rest = keepAliveRest(base, svc.daemon.ca, token, sockets);
        closers.push(async () => rest.close());
        return async () => {
          const payload = `t${seq++}`;
          const r = await rest.call('POST', path, payload);
          check(r.status, r.body, svcSide ? JSON.stringify(payload) : undefined, 'REST task');
        };
      };
      /** Tasks/s with `inFlight` outstanding, p50/p99 and (svc) svcd's CPU time per task in the note. */
      const rate = async (subject: string, group: string, call: Call, svcSide: boolean): Promise<Row> => {
        const cpuBefore = cpuMs(svc.daemon.pid);
        const p = await closedLoop(call, inFlight, ms);
        const cpu = svcSide
          ? `, svcd CPU ${(((cpuMs(svc.daemon.pid) - cpuBefore) * 1000) / p.samples.length).toFixed(0)} µs/task`
          : '';
        const s = summarize(p.samples);
        return {
          subject,
          group,
          value: p.rate,
          n: s.n,
          note: `p50 ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms${cpu}`,
        };
      };
      const floorUrl = `https://127.0.0.1:${ports.https}`;
      const variants: {
        name: string;
        floor: string;
        svc: (n: number) => Promise<Call>;
        bare: (n: number) => Promise<Call>;
      }[] = [
        {
          name: 'TCP',
          floor: 'floor TLS TCP echo',
          svc: () => tcpCall(svc.daemon.tcpPort, true),
          bare: () => tcpCall(ports.tcp, false),
        },
        {
          name: 'REST',
          floor: 'floor HTTPS echo',
          svc: async (n) => restCall(svc.daemon.restUrl, n, true),
          bare: async (n) => restCall(floorUrl, n, false),
        },
      ];
      for (const v of variants) {
        log(`tasks: ${v.name} sequential (${count})`);
        latency.push(
          latencyRow(`svc ${v.name}`, summarize(await sequential(await v.svc(1), count, 60_000)), {
            group: v.name,
          }),
        );
        latency.push(
          latencyRow(v.floor, summarize(await sequential(await v.bare(1), count, 60_000)), { group: v.name }),
        );
        log(`tasks: ${v.name} ${inFlight} in flight (${ms} ms)`);
        // TCP: 8 outstanding requests on one connection; REST: 8 keep-alive connections.
        for (const [subject, make] of [
          [`svc ${v.name}`, v.svc],
          [v.floor, v.bare],
        ] as const) {
          rates.push(await rate(subject, v.name, await make(inFlight), subject.startsWith('svc')));
        }
      }
      log(`tasks: TCP ${inFlight} in flight, worker fetching over HTTPS (${ms} ms)`);
      await registerWorker('fetch');
      rates.push(
        await rate(
          'svc TCP, worker with fetch over HTTPS',
          'TCP',
          await tcpCall(svc.daemon.tcpPort, true),
          true,
        ),
      );
    } finally {
      for (const close of closers.reverse()) await close().catch(() => undefined);
      await svc.close();
      await rm(dir, { recursive: true, force: true });
    }
    const figures: Figure[] = [
      {
        id: '11a',
        title: 'Task round trip, sequential (client → svcd → worker → client)',
        unit: 'ms',
        better: 'lower',
        rows: latency,
      },
      {
        id: '11b',
        title: `Tasks/s, ${inFlight} in flight (worker: ${inFlight} runWorker loops on one TCP connection)`,
        unit: 'tasks/s',
        better: 'higher',
        rows: rates,
      },
    ];
    return figures;
  },
};
