// Python client (clients/python) against the TypeScript client (@svc/client), same daemon, same run:
// GET /svc/self sequential p50/p99 and requests/s with 64 in flight over REST, TCP and WSS, and the
// STDOUT event latency (line printed → the client's callback) over TCP and WSS. Every figure is
// printed with its ratio Python ÷ TS. Not part of `npm run bench` (it needs the Python client's venv).
//
//   npx node bench/python-client.ts [--quick]
//
// The venv is the Python client suite's (node_modules/.cache/svc-python-client/venv), created here
// with the runtime dependencies when missing. The printer is bench/lib/line-printer.ts: each line
// carries process.hrtime.bigint() (CLOCK_MONOTONIC) taken before its write; both clients stamp the
// callback with the same clock (Python time.monotonic_ns()), so latency needs no clock offset.
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { connect, type SvcClient } from '@svc/client';
import { summarize } from './lib/util.ts';

const run = promisify(execFile);
const REPO = resolve(import.meta.dirname, '..');
const VENV = join(REPO, 'node_modules/.cache/svc-python-client/venv');
const PYTHON = join(VENV, 'bin/python');
const quick = process.argv.includes('--quick');
const SEQUENTIAL = quick ? 200 : 1000;
const SECONDS = quick ? 1.5 : 3;
const IN_FLIGHT = 64;
const LINES = quick ? 300 : 1000;
const PRINTER = [process.execPath, join(REPO, 'bench/lib/line-printer.ts')];

type Transport = 'rest' | 'tcp' | 'wss';
interface Figures {
  sequential_ms: number[];
  requests_per_second: number;
  event_latency_ms?: number[];
}
interface Served {
  rest: string;
  ca: string;
  ports: { rest: number; tcp: number };
  tokens: Record<string, string>;
}

async function ensureVenv(): Promise<void> {
  if (existsSync(PYTHON)) return;
  await run('python3', ['-m', 'venv', VENV]);
  await run(PYTHON, ['-m', 'pip', 'install', '--quiet', 'requests', 'websocket-client', 'msgpack'], {
    timeout: 300_000,
  });
}

async function serve(): Promise<{ info: Served; stop: () => void }> {
  const child = spawn(
    process.execPath,
    [join(REPO, 'packages/testkit/bin/svc-testkit.js'), 'serve', '--json'],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  const first = await new Promise<string>((done, fail) => {
    createInterface({ input: child.stdout }).once('line', done);
    child.once('exit', (code) => fail(new Error(`svc-testkit serve exited ${code}`)));
  });
  return { info: JSON.parse(first) as Served, stop: () => child.stdin.end() };
}

async function client(info: Served, transport: Transport): Promise<SvcClient> {
  const { readFile } = await import('node:fs/promises');
  return connect({
    url: info.rest,
    transport,
    tcpPort: info.ports.tcp,
    ca: await readFile(info.ca),
    token: info.tokens['svc-admin']!,
  });
}

async function tsFigures(info: Served, transport: Transport): Promise<Figures> {
  const c = await client(info, transport);
  for (let i = 0; i < 20; i++) await c.getSelf();
  const sequential: number[] = [];
  for (let i = 0; i < SEQUENTIAL; i++) {
    const started = performance.now();
    await c.getSelf();
    sequential.push(performance.now() - started);
  }
  // REST: one client per loop (its own keep-alive connection); TCP/WSS: one connection for all.
  const clients =
    transport === 'rest'
      ? await Promise.all(Array.from({ length: IN_FLIGHT }, () => client(info, transport)))
      : [c];
  let done = 0;
  const stop = performance.now() + SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async (_, i) => {
      const mine = clients[i % clients.length]!;
      while (performance.now() < stop) {
        await mine.getSelf();
        done++;
      }
    }),
  );
  const rps = done / ((performance.now() - started) / 1000);
  const figures: Figures = { sequential_ms: sequential, requests_per_second: rps };
  if (transport !== 'rest') figures.event_latency_ms = await tsEvents(c, transport);
  for (const other of clients) if (other !== c) await other.close();
  await c.close();
  return figures;
}

async function tsEvents(c: SvcClient, transport: Transport): Promise<number[]> {
  const name = `ts-bench-printer-${transport}`;
  await c.deleteApplication(name).catch(() => undefined);
  const latencies: number[] = [];
  let buffer = '';
  let finish: () => void = () => undefined;
  const finished = new Promise<void>((done) => (finish = done));
  await c.registerApplication(
    name,
    { command: [...PRINTER, String(LINES), '2', '500'].join(' '), behavior: { exit: 'standby' } },
    {
      subscribeEvents: ['STDOUT'],
      onEvent: (event) => {
        const received = process.hrtime.bigint();
        if (event.event_type !== 'STDOUT') return;
        buffer += String((event.data as { output?: string }).output ?? '');
        const lines = buffer.split('\n');
        buffer = lines.pop() ?? '';
        for (const line of lines) {
          if (line.startsWith('L ')) latencies.push(Number(received - BigInt(line.split(' ')[2]!)) / 1e6);
          else if (line === 'END') finish();
        }
      },
    },
  );
  await Promise.race([finished, new Promise((done) => setTimeout(done, 120_000))]);
  await c.deleteApplication(name).catch(() => undefined);
  return latencies.slice(20);
}

const fmt = (value: number): string =>
  value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);

async function main(): Promise<void> {
  await ensureVenv();
  const { info, stop } = await serve();
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-python-'));
  try {
    const line = join(dir, 'serve.json');
    await writeFile(line, JSON.stringify(info));
    const ts: Partial<Record<Transport, Figures>> = {};
    for (const transport of ['rest', 'tcp', 'wss'] as const) ts[transport] = await tsFigures(info, transport);
    const py = JSON.parse(
      (
        await run(
          PYTHON,
          [
            join(REPO, 'bench/python_client_bench.py'),
            line,
            JSON.stringify(PRINTER),
            String(SEQUENTIAL),
            String(SECONDS),
            String(IN_FLIGHT),
            String(LINES),
          ],
          { timeout: 600_000, maxBuffer: 64 * 1024 * 1024 },
        )
      ).stdout,
    ) as Record<Transport, Figures>;
    const rows: string[] = ['| Figure | Transport | Python | TS | Python ÷ TS |', '|---|---|---|---|---|'];
    for (const transport of ['rest', 'tcp', 'wss'] as const) {
      const p = py[transport];
      const t = ts[transport]!;
      const ps = summarize(p.sequential_ms);
      const tss = summarize(t.sequential_ms);
      rows.push(
        `| GET /svc/self sequential p50 (ms) | ${transport} | ${fmt(ps.p50)} | ${fmt(tss.p50)} | ${(ps.p50 / tss.p50).toFixed(2)} |`,
      );
      rows.push(
        `| GET /svc/self sequential p99 (ms) | ${transport} | ${fmt(ps.p99)} | ${fmt(tss.p99)} | ${(ps.p99 / tss.p99).toFixed(2)} |`,
      );
      rows.push(
        `| requests/s, ${IN_FLIGHT} in flight | ${transport} | ${fmt(p.requests_per_second)} | ${fmt(t.requests_per_second)} | ${(p.requests_per_second / t.requests_per_second).toFixed(2)} |`,
      );
      if (p.event_latency_ms !== undefined && t.event_latency_ms !== undefined) {
        const pe = summarize(p.event_latency_ms);
        const te = summarize(t.event_latency_ms);
        rows.push(
          `| STDOUT event latency p50 (ms) | ${transport} | ${fmt(pe.p50)} | ${fmt(te.p50)} | ${(pe.p50 / te.p50).toFixed(2)} |`,
        );
        rows.push(
          `| STDOUT event latency p99 (ms) | ${transport} | ${fmt(pe.p99)} | ${fmt(te.p99)} | ${(pe.p99 / te.p99).toFixed(2)} |`,
        );
        rows.push(`| lines received | ${transport} | ${pe.n} | ${te.n} | |`);
      }
    }
    process.stdout.write(`${rows.join('\n')}\n`);
  } finally {
    stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
