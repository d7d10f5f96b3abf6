// Figures 9 and 10: events.
//   9. Line printed → client receives it (p50/p99): the same printer process (lib/line-printer.ts,
//      2000 lines 2 ms apart, each carrying its CLOCK_MONOTONIC stamp) under every subject; the
//      latency is the bench's process.hrtime.bigint() when the line reaches its handler minus the
//      stamp. svc: STDOUT push on a TLS TCP connection subscribed atomically with the registration
//      (PUT ?subscribe_events=STDOUT); pm2: `log:out` on pm2.launchBus; supervisord:
//      supervisor.tailProcessStdoutLog polled back to back (the best a polling client can do);
//      floor: the bench itself reading the child's stdout pipe.
//  10. STDOUT events/s delivered to 1 and to 100 subscriptions (10 TLS TCP connections × 10), every
//      subscription checked gapless (sequence 1..N in order) and complete (its last event is the
//      `finished` STDOUT), driven by a chatty printer (one write(2) per line, ~20 µs pauses).
//      And STATUS events/s: disable/enable toggles (8 in flight) of a never-started app.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Response } from '@svc/protocol';
import { okPush, pushClient, type PushClient } from './lib/push-client.ts';
import { latencyRow, type BenchContext, type Benchmark, type Figure, type Row } from './lib/report.ts';
import { killGroup, log, now, onCleanup, sleep, summarize } from './lib/util.ts';
import { startPm2 } from './managers/pm2.ts';
import { startSupervisord } from './managers/supervisord.ts';
import { startSvc, type SvcManager } from './managers/svc.ts';
import { commandLine, type ManagerKind } from './managers/types.ts';

const PRINTER = join(import.meta.dirname, 'lib/line-printer.ts');
const WARMUP_LINES = 20;
const FUTURE = new Date(Date.now() + 365 * 24 * 3600 * 1000).toISOString().replace(/\.\d+Z$/, 'Z');

/** Splits a stream of text into lines and records printed → received for each `L <i> <stamp>`. */
class LineLatency {
  readonly samples: number[] = [];
  received = 0;
  ended = false;
  #partial = '';
  #resolve: (() => void) | undefined;
  readonly done = new Promise<void>((resolve) => {
    this.#resolve = resolve;
  });

  feed(text: string, at: bigint): void {
    const lines = (this.#partial + text).split('\n');
    this.#partial = lines.pop() ?? '';
    for (const line of lines) {
      if (line === 'END') {
        this.ended = true;
        this.#resolve?.();
        continue;
      }
      const m = /^L (\d+) (\d+)$/.exec(line);
      if (m === null) continue;
      this.received++;
      if (Number(m[1]) >= WARMUP_LINES) this.samples.push(Number(at - BigInt(m[2]!)) / 1e6);
    }
  }
}

function printerArgv(count: number, intervalMs: number, delayMs: number, maxMs = 60_000): string[] {
  return [process.execPath, PRINTER, String(count), String(intervalMs), String(delayMs), String(maxMs)];
}

async function within(what: string, promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function latencyOf(kind: ManagerKind, ctx: BenchContext, count: number): Promise<LineLatency> {
  const lines = new LineLatency();
  const budget = count * 2 + 20_000;
  const argv = printerArgv(count, 2, 500);
  switch (kind) {
    case 'floor': {
      const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'], detached: true });
      const stop = onCleanup('floor printer', () => killGroup(child.pid!));
      child.stdout.on('data', (chunk: Buffer) => lines.feed(chunk.toString('latin1'), process.hrtime.bigint()));
      try {
        await within('the floor printer', lines.done, budget);
      } finally {
        await stop();
      }
      return lines;
    }
    case 'svc': {
      const env = ctx.svcEnv();
      const svc = await startSvc(env === undefined ? {} : { env });
      try {
        const client = await pushClient(svc.daemon.tcpPort, svc.daemon.ca, (push) => {
          const at = process.hrtime.bigint();
          const m = JSON.parse(Buffer.from(push.body).toString('utf8')) as { event_type: string; data: { output?: string } };
          if (m.event_type === 'STDOUT' && m.data.output !== undefined) lines.feed(m.data.output, at);
        });
        try {
          okPush(
            await client.call('PUT', '/svc/app/printer', svc.token, {
              query: { subscribe_events: 'STDOUT' },
              body: { command: commandLine(argv), behavior: { exit: 'standby' } },
            }),
            'PUT printer?subscribe_events=STDOUT',
          );
          await within('svc STDOUT pushes', lines.done, budget);
        } finally {
          await client.close();
        }
      } finally {
        await svc.close();
      }
      return lines;
    }
    case 'pm2': {
      const pm2 = await startPm2();
      try {
        const bus = await new Promise<{ on(event: string, fn: (packet: { process: { name: string }; data: string }) => void): void }>(
          (resolve, reject) => pm2.api.launchBus((err: Error | null, b: unknown) => (err ? reject(err) : resolve(b as never))),
        );
        bus.on('log:out', (packet) => {
          const at = process.hrtime.bigint();
          if (packet.process.name === 'printer') lines.feed(packet.data, at);
        });
        await pm2.start({ name: 'printer', argv, restart: false });
        await within('pm2 log:out', lines.done, budget);
      } finally {
        await pm2.close();
      }
      return lines;
    }
    case 'supervisord': {
      const sup = await startSupervisord();
      try {
        const spec = { name: 'printer', argv, restart: false };
        await sup.prepare([spec]);
        await sup.start(spec);
        let [, offset] = (await sup.rpc.call('supervisor.tailProcessStdoutLog', 'printer', 0, 0)) as [string, number, boolean];
        const deadline = now() + budget;
        while (!lines.ended && now() < deadline) {
          const [data, next] = (await sup.rpc.call('supervisor.tailProcessStdoutLog', 'printer', offset, 65536)) as [string, number, boolean];
          const at = process.hrtime.bigint();
          // tail answers the last `length` bytes up to the end of the log; the new ones are its last (next − offset).
          if (next > offset) lines.feed(data.slice(Math.max(0, data.length - (next - offset))), at);
          offset = next;
        }
        if (!lines.ended) throw new Error('timed out polling supervisord');
      } finally {
        await sup.close();
      }
      return lines;
    }
  }
}

// ---- figure 10 ---------------------------------------------------------------------------------

interface Fanout {
  subscriptions: number;
  connections: number;
  delivered: number;
  seconds: number;
  gapless: boolean;
  complete: boolean;
  note: string;
}

/** Per-subscription bookkeeping fed straight from the socket: next expected sequence, done. */
class SequenceCheck {
  readonly next = new Map<string, number>();
  readonly finished = new Set<string>();
  delivered = 0;
  gaps = 0;
  first = 0;
  last = 0;

  add(id: string): void {
    this.next.set(id, 1);
  }

  push(response: Response, isLast: (body: Buffer) => boolean): void {
    const t = now();
    if (this.delivered === 0) this.first = t;
    this.last = t;
    this.delivered++;
    const body = Buffer.from(response.body.buffer, response.body.byteOffset, response.body.byteLength);
    // The body begins `{"subscription_id":"<id>","sequence":N` (events/README.md); no full parse.
    const head = body.toString('latin1', 0, Math.min(body.length, 120));
    const m = /^\{"subscription_id":"([^"]+)","sequence":(\d+)/.exec(head);
    if (m === null) {
      this.gaps++;
      return;
    }
    const expected = this.next.get(m[1]!);
    if (expected === undefined) return;
    if (Number(m[2]) !== expected) this.gaps++;
    this.next.set(m[1]!, Number(m[2]) + 1);
    if (isLast(body)) this.finished.add(m[1]!);
  }
}

async function subscribers(
  svc: SvcManager,
  path: string,
  events: string,
  count: number,
  connections: number,
  check: SequenceCheck,
  isLast: (body: Buffer) => boolean,
): Promise<PushClient[]> {
  const clients: PushClient[] = [];
  for (let c = 0; c < connections; c++) clients.push(await pushClient(svc.daemon.tcpPort, svc.daemon.ca, (p) => check.push(p, isLast)));
  for (let i = 0; i < count; i++) {
    const r = okPush(await clients[i % connections]!.call('POST', path, svc.token, { query: { events } }), 'subscribe');
    check.add((JSON.parse(Buffer.from(r.body).toString('utf8')) as { subscription_id: string }).subscription_id);
  }
  return clients;
}

async function stdoutFanout(svc: SvcManager, subs: number, seconds: number): Promise<Fanout> {
  const app = `chatty-${subs}`;
  const connections = Math.min(subs, 10);
  const check = new SequenceCheck();
  const finishedMarker = Buffer.from('"finished":true');
  // Registered with a 1.5 s delay before the first line, subscribed in the meantime (untimed).
  const control = await pushClient(svc.daemon.tcpPort, svc.daemon.ca, () => undefined);
  let clients: PushClient[] = [];
  try {
    okPush(
      await control.call('PUT', `/svc/app/${app}`, svc.token, {
        body: { command: commandLine(printerArgv(10_000_000, 0.02, 1500, seconds * 1000)), behavior: { exit: 'standby' } },
      }),
      `PUT ${app}`,
    );
    clients = await subscribers(svc, `/svc/app/${app}/subscribe`, 'STDOUT', subs, connections, check, (body) => body.includes(finishedMarker));
    await within(
      `every subscription's finished STDOUT (${subs} subscriptions)`,
      (async () => {
        while (check.finished.size < subs) await sleep(5);
      })(),
      seconds * 1000 + 60_000,
    );
  } finally {
    for (const c of clients) await c.close();
    await control.call('DELETE', `/svc/app/${app}`, svc.token).catch(() => undefined);
    await control.close();
  }
  return {
    subscriptions: subs,
    connections,
    delivered: check.delivered,
    seconds: (check.last - check.first) / 1000,
    gapless: check.gaps === 0,
    complete: check.finished.size === subs,
    note: `${check.delivered / subs} STDOUT events per subscription`,
  };
}

async function statusFanout(svc: SvcManager, subs: number, seconds: number): Promise<Fanout> {
  const apps = Array.from({ length: 8 }, (_, i) => `toggle-${subs}-${i}`);
  const connections = Math.min(subs, 10);
  const check = new SequenceCheck();
  const control = await pushClient(svc.daemon.tcpPort, svc.daemon.ca, () => undefined);
  let clients: PushClient[] = [];
  try {
    for (const app of apps)
      okPush(await control.call('PUT', `/svc/app/${app}`, svc.token, { body: { command: 'sleep 600', start_time: FUTURE } }), `PUT ${app}`);
    clients = await subscribers(svc, '/svc/subscribe', 'STATUS', subs, connections, check, () => false);
    // One toggle loop per app (8 in flight): disable, enable, disable… each one STATUS event to
    // every (wildcard) subscription.
    const deadline = now() + seconds * 1000;
    const counts = await Promise.all(
      apps.map(async (app) => {
        let n = 0;
        while (now() < deadline && n < 1_000_000) {
          okPush(await control.call('POST', `/svc/app/${app}/${n % 2 === 0 ? 'disable' : 'enable'}`, svc.token), 'toggle');
          n++;
        }
        return n;
      }),
    );
    const toggles = counts.reduce((a, b) => a + b, 0);
    const expected = toggles * subs;
    await within(
      `${expected} STATUS events`,
      (async () => {
        while (check.delivered < expected) await sleep(5);
      })(),
      60_000,
    );
    return {
      subscriptions: subs,
      connections,
      delivered: check.delivered,
      seconds: (check.last - check.first) / 1000,
      gapless: check.gaps === 0,
      complete: [...check.next.values()].every((n) => n === toggles + 1),
      note: `${toggles} toggles of 8 apps, 8 in flight, wildcard subscriptions`,
    };
  } finally {
    for (const c of clients) await c.close();
    for (const app of apps) await control.call('DELETE', `/svc/app/${app}`, svc.token).catch(() => undefined);
    await control.close();
  }
}

export const eventsBenchmark: Benchmark = {
  name: 'events',
  description: 'line printed → client receives (p50/p99) vs pm2 bus, supervisord tail polling, a bare pipe; events/s to 1 and 100 subscribers',
  async run(ctx) {
    const count = ctx.quick ? 500 : 2000;
    const latency: Row[] = [];
    const order: ManagerKind[] = ['floor', 'svc', 'pm2', 'supervisord'];
    for (const kind of order) {
      if (!ctx.managers.includes(kind)) continue;
      // supervisord polls: a short run is enough for a figure in tens of ms.
      const n = kind === 'supervisord' ? Math.min(count, 500) : count;
      log(`events: line latency, ${kind} (${n} lines 2 ms apart)`);
      const lines = await latencyOf(kind, ctx, n);
      const s = summarize(lines.samples);
      const lost = n - lines.received;
      latency.push(latencyRow(kind, s, lost > 0 ? { note: `${lost} lines not received` } : {}));
    }
    const figures: Figure[] = [
      {
        id: '9',
        title: 'Line printed → client receives it',
        unit: 'ms',
        better: 'lower',
        target: '≤ 0.4 / 1.6 ms over TLS',
        rows: latency,
      },
    ];
    if (!ctx.managers.includes('svc')) return figures;
    const seconds = ctx.quick ? 1.5 : 3;
    const env = ctx.svcEnv();
    const svc = await startSvc(env === undefined ? {} : { env });
    const rows: Row[] = [];
    try {
      for (const [driver, run] of [
        ['STDOUT', stdoutFanout],
        ['STATUS', statusFanout],
      ] as const) {
        for (const subs of [1, 100]) {
          log(`events: ${driver} events/s to ${subs} subscription(s)`);
          const f = await run(svc, subs, seconds);
          rows.push({
            subject: `svc ${driver}, ${subs} sub${subs > 1 ? `s on ${f.connections} conns` : ''}`,
            group: `${driver}-${subs}`,
            value: f.delivered / f.seconds,
            n: f.delivered,
            note: `${f.gapless ? 'gapless' : 'GAPS'}${f.complete ? '' : ', INCOMPLETE'}; ${f.note}`,
          });
        }
      }
    } finally {
      await svc.close();
    }
    figures.push({
      id: '10',
      title: 'Events/s delivered (sum over subscriptions), gapless',
      unit: 'events/s',
      better: 'higher',
      target: '≥ 50,000 to 100 subscribers',
      rows,
    });
    return figures;
  },
};
