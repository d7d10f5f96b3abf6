// Figure 12: the cost of one forwarding hop. The same request (GET /svc/self over TLS TCP) sent to
// a target svcd directly and through a gateway svcd with `X-Target-Host`: latency p50/p99 with 1
// caller and with 64 in flight, and requests/s at 1 and 64 in flight (64 outstanding requests on
// one connection). Both daemons run on this machine, so the forwarded figures also carry the
// gateway's CPU use on the same cores.
import { startTestDaemon, startTestIssuer, tcpClient, type PersistentClient } from '@svc/testkit';
import { latencyRow, type Benchmark, type Figure, type Row } from './lib/report.ts';
import { closedLoop, cpuMs, log, onCleanup, sequential, summarize } from './lib/util.ts';

type Call = () => Promise<void>;

export const forwardBenchmark: Benchmark = {
  name: 'forward',
  description:
    'GET /svc/self over TCP, direct vs through a gateway (X-Target-Host): p50/p99, req/s at 1 and 64',
  async run(ctx) {
    const count = ctx.quick ? 500 : 5000;
    const seconds = ctx.quick ? 1 : 4;
    const issuer = await startTestIssuer();
    const closers: (() => Promise<void>)[] = [];
    const stopIssuer = onCleanup('forward issuer', () => issuer.close());
    try {
      const env = ctx.svcEnv() ?? {};
      const target = await startTestDaemon({ issuer, env: { ...env, SVC_HOST_NAME: 'bench-target' } });
      closers.push(onCleanup('forward target svcd', () => target.close()));
      const targetAddress = `127.0.0.1:${target.tcpPort}`;
      const gateway = await startTestDaemon({
        issuer,
        tlsFrom: target,
        env: { ...env, SVC_HOST_NAME: 'bench-gateway', SVC_FORWARD_TARGETS: targetAddress },
      });
      closers.push(onCleanup('forward gateway svcd', () => gateway.close()));
      const token = await target.token('admin');
      const call = (client: PersistentClient, headers: Record<string, string>): Call => {
        closers.push(() => client.close());
        return async () => {
          const r = await client.call('GET', '/svc/self', { token, headers });
          if (r.status !== 200) throw new Error(`GET /svc/self: HTTP ${r.status} ${r.text()}`);
        };
      };
      const subjects: { name: string; pids: number[]; open: () => Promise<Call> }[] = [
        {
          name: 'direct',
          pids: [target.pid],
          open: async () => call(await tcpClient('127.0.0.1', target.tcpPort, target.ca), {}),
        },
        {
          name: 'svc forwarded',
          pids: [gateway.pid, target.pid],
          open: async () =>
            call(await tcpClient('127.0.0.1', gateway.tcpPort, gateway.ca), {
              'x-target-host': targetAddress,
            }),
        },
      ];
      const latency1: Row[] = [];
      const latency64: Row[] = [];
      const rps: Row[] = [];
      for (const subject of subjects) {
        log(`forward: ${subject.name}`);
        const one = await subject.open();
        latency1.push(latencyRow(subject.name, summarize(await sequential(one, count, 30_000))));
        const single = await closedLoop(one, 1, seconds * 1000);
        rps.push({ subject: subject.name, group: '1 caller', value: single.rate, note: '1 in flight' });
        const manyCall = await subject.open();
        const cpuBefore = subject.pids.reduce((sum, pid) => sum + cpuMs(pid), 0);
        const many = await closedLoop(manyCall, 64, seconds * 1000);
        // svcd CPU per request (the target's; forwarded: the gateway's plus the target's): the
        // figure a loaded machine disturbs least; direct ÷ forwarded bounds the CPU-bound ratio.
        const cpu = subject.pids.reduce((sum, pid) => sum + cpuMs(pid), 0) - cpuBefore;
        latency64.push(latencyRow(subject.name, summarize(many.samples)));
        rps.push({
          subject: subject.name,
          group: '64 callers',
          value: many.rate,
          note: `64 in flight, 1 connection, svcd CPU ${((cpu * 1000) / many.samples.length).toFixed(0)} µs/request`,
        });
      }
      const figures: Figure[] = [
        {
          id: '12a',
          title: 'GET /svc/self over TCP, 1 caller: direct vs forwarded',
          unit: 'ms',
          better: 'lower',
          rows: latency1,
        },
        {
          id: '12b',
          title: 'GET /svc/self over TCP, 64 in flight: latency',
          unit: 'ms',
          better: 'lower',
          rows: latency64,
        },
        {
          id: '12c',
          title: 'GET /svc/self over TCP: requests/s',
          unit: 'req/s',
          better: 'higher',
          rows: rps,
        },
      ];
      return figures;
    } finally {
      for (const close of closers.reverse()) await close().catch(() => undefined);
      await stopIssuer();
    }
  },
};
