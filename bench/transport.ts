// Figure 6: GET /svc/self latency per transport (REST keep-alive, WSS, TCP), sequential, and
// requests/s with 64 in flight, each against a bare Node server doing the same I/O (the floor).
import { fork } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tcpClient, wsClient, type ApiClient } from '@svc/testkit';
import { keepAliveRest, ok } from './lib/rest.ts';
import { latencyRow, type Benchmark, type Figure, type Row } from './lib/report.ts';
import { killGroup, log, now, onCleanup, sequential, summarize } from './lib/util.ts';
import { startSvc } from './managers/svc.ts';

type Call = () => Promise<void>;

/** `inFlight` workers issuing calls back to back for `ms`; returns completed requests/s. */
async function throughput(call: Call, inFlight: number, ms: number): Promise<number> {
  await Promise.all(Array.from({ length: inFlight }, () => call()));
  let done = 0;
  const t0 = now();
  const deadline = t0 + ms;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (now() < deadline) {
        await call();
        done++;
      }
    }),
  );
  return done / ((now() - t0) / 1000);
}

function check(result: { status: number }, what: string): void {
  if (result.status !== 200) throw new Error(`${what}: HTTP ${result.status}`);
}

export const transportBenchmark: Benchmark = {
  name: 'transport',
  description:
    'GET /svc/self per transport: sequential p50/p99 and req/s at 64 in flight vs a bare Node server',
  async run(ctx) {
    const count = ctx.quick ? 500 : 5000;
    const seconds = ctx.quick ? 1 : 4;
    const env = ctx.svcEnv();
    const svc = await startSvc(env === undefined ? {} : { env });
    const dir = await mkdtemp(join(tmpdir(), 'svc-bench-floor-server-'));
    const closers: (() => Promise<void>)[] = [];
    const latency: Row[] = [];
    const rps: Row[] = [];
    try {
      const self = ok(await svc.rest.call('GET', '/svc/self'), 'GET /svc/self').body;
      await writeFile(join(dir, 'body.json'), self);
      const ssl = join(svc.daemon.workDir, 'ssl');
      const server = fork(
        join(import.meta.dirname, 'lib/floor-server.ts'),
        [join(ssl, 'server-key.pem'), join(ssl, 'server.pem'), join(dir, 'body.json')],
        { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
      );
      const stopServer = onCleanup('floor server', () => {
        server.disconnect();
        killGroup(server.pid!);
      });
      closers.push(stopServer);
      const ports = await new Promise<{ https: number; tcp: number }>((resolve, reject) => {
        server.once('message', (m) => resolve(m as { https: number; tcp: number }));
        server.once('exit', (code) => reject(new Error(`floor server exited with ${code}`)));
      });
      const floorUrl = `https://127.0.0.1:${ports.https}`;
      const token = svc.token;
      const persistent = async (client: Promise<ApiClient>): Promise<Call> => {
        const c = await client;
        closers.push(() => c.close());
        return async () => check(await c.call('GET', '/svc/self', { token }), 'GET /svc/self');
      };
      const restCall = (base: string, sockets: number): Call => {
        const rest = keepAliveRest(base, svc.daemon.ca, token, sockets);
        closers.push(async () => rest.close());
        return async () => check(await rest.call('GET', '/svc/self'), 'GET /svc/self');
      };
      const transports: {
        name: string;
        svc: () => Promise<Call>;
        floor: () => Promise<Call>;
        svc64: () => Promise<Call>;
        floor64: () => Promise<Call>;
      }[] = [
        {
          name: 'REST',
          svc: async () => restCall(svc.daemon.restUrl, 1),
          floor: async () => restCall(floorUrl, 1),
          svc64: async () => restCall(svc.daemon.restUrl, 64),
          floor64: async () => restCall(floorUrl, 64),
        },
        {
          name: 'WSS',
          svc: () => persistent(wsClient(svc.daemon.restUrl, svc.daemon.ca, token)),
          floor: () => persistent(wsClient(floorUrl, svc.daemon.ca, token)),
          svc64: () => persistent(wsClient(svc.daemon.restUrl, svc.daemon.ca, token)),
          floor64: () => persistent(wsClient(floorUrl, svc.daemon.ca, token)),
        },
        {
          name: 'TCP',
          svc: () => persistent(tcpClient('127.0.0.1', svc.daemon.tcpPort, svc.daemon.ca)),
          floor: () => persistent(tcpClient('127.0.0.1', ports.tcp, svc.daemon.ca)),
          svc64: () => persistent(tcpClient('127.0.0.1', svc.daemon.tcpPort, svc.daemon.ca)),
          floor64: () => persistent(tcpClient('127.0.0.1', ports.tcp, svc.daemon.ca)),
        },
      ];
      for (const t of transports) {
        log(`transport: ${t.name}`);
        const floorLabel = t.name === 'REST' ? 'floor HTTPS' : `floor ${t.name}`;
        latency.push(
          latencyRow(`svc ${t.name}`, summarize(await sequential(await t.svc(), count, 30_000)), {
            group: t.name,
          }),
        );
        latency.push(
          latencyRow(floorLabel, summarize(await sequential(await t.floor(), count, 30_000)), {
            group: t.name,
          }),
        );
        rps.push({
          subject: `svc ${t.name}`,
          group: t.name,
          value: await throughput(await t.svc64(), 64, seconds * 1000),
        });
        rps.push({
          subject: floorLabel,
          group: t.name,
          value: await throughput(await t.floor64(), 64, seconds * 1000),
        });
      }
    } finally {
      for (const close of closers.reverse()) await close().catch(() => undefined);
      await svc.close();
      await rm(dir, { recursive: true, force: true });
    }
    const figures: Figure[] = [
      { id: '6a', title: 'GET /svc/self latency, sequential', unit: 'ms', better: 'lower', rows: latency },
      {
        id: '6b',
        title: 'GET /svc/self requests/s, 64 in flight',
        unit: 'req/s',
        better: 'higher',
        target: '≥ 50% of the bare server',
        rows: rps,
      },
    ];
    return figures;
  },
};
