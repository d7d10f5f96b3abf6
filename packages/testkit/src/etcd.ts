// A real etcd (Debian's `etcd-server`, installed by script/test-deps.sh) for cluster tests: one
// member on loopback with a temp data dir and ports chosen free at start. It can be killed and
// started again on the same ports and data (registry restart tests) and is always removed by close().
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.ts';

export const ETCD_EXECUTABLE = process.env['SVC_TEST_ETCD'] ?? '/usr/bin/etcd';
const START_TIMEOUT_MS = 30_000;

/** PEM files for an etcd that serves TLS and requires client certificates signed by `caFile`. */
export interface TestEtcdTls {
  certFile: string;
  keyFile: string;
  caFile: string;
}

export interface TestEtcd {
  /** Client URL, `http(s)://127.0.0.1:<port>`: what SVC_REGISTRY_URL names. */
  readonly url: string;
  readonly clientPort: number;
  readonly dataDir: string;
  /** The running member's pid, or undefined while it is stopped. */
  pid(): number | undefined;
  /** Stops the member: SIGKILL by default (a crash), SIGTERM for a clean stop. Data stays. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same ports and data dir, and waits until it answers /health. */
  start(): Promise<void>;
  /** Stops it and removes its data. */
  close(): Promise<void>;
  /** Its last output lines, for a failure message. */
  output(): string;
}

function healthy(port: number, tls: TestEtcdTls | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    const options = { host: '127.0.0.1', port, path: '/health', timeout: 1000 };
    type Callback = (res: IncomingMessage) => void;
    const send =
      tls === undefined
        ? (callback: Callback): ClientRequest => request(options, callback)
        : (callback: Callback): ClientRequest =>
            httpsRequest(
              {
                ...options,
                ca: readFileSync(tls.caFile),
                cert: readFileSync(tls.certFile),
                key: readFileSync(tls.keyFile),
              },
              callback,
            );
    const req = send((res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      res.on('end', () => resolve(res.statusCode === 200 && body.includes('"true"')));
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/**
 * `tls`: serve clients over TLS and require a client certificate (the same certificate serves as
 * the test's client certificate; it needs both serverAuth and clientAuth and an IP SAN 127.0.0.1).
 */
export async function startEtcd(options: { name?: string; tls?: TestEtcdTls } = {}): Promise<TestEtcd> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-test-etcd-'));
  const clientPort = await freePort();
  const peerPort = await freePort();
  const name = options.name ?? 'svc-test';
  const tls = options.tls;
  const url = `${tls === undefined ? 'http' : 'https'}://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let log = '';

  const launch = async (): Promise<void> => {
    const proc = spawn(
      ETCD_EXECUTABLE,
      [
        `--name=${name}`,
        `--data-dir=${join(dataDir, 'data')}`,
        `--listen-client-urls=${url}`,
        `--advertise-client-urls=${url}`,
        `--listen-peer-urls=${peer}`,
        `--initial-advertise-peer-urls=${peer}`,
        `--initial-cluster=${name}=${peer}`,
        ...(tls === undefined
          ? []
          : [
              `--cert-file=${tls.certFile}`,
              `--key-file=${tls.keyFile}`,
              `--trusted-ca-file=${tls.caFile}`,
              '--client-cert-auth',
            ]),
        '--log-level=warn',
        '--logger=zap',
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { PATH: process.env['PATH'], ETCD_UNSUPPORTED_ARCH: 'amd64' },
      },
    );
    child = proc;
    const collect = (chunk: Buffer): void => {
      log = (log + chunk.toString('utf8')).slice(-8000);
    };
    proc.stdout.on('data', collect);
    proc.stderr.on('data', collect);
    let spawnError: Error | undefined;
    exited = new Promise((resolve) => {
      proc.once('error', (error) => {
        spawnError = error;
        resolve();
      });
      proc.once('exit', () => resolve());
    });
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (spawnError !== undefined)
        throw new Error(`etcd could not start (${spawnError.message}): run script/test-deps.sh`);
      if (proc.exitCode !== null || proc.signalCode !== null)
        throw new Error(`etcd exited at start (${proc.exitCode ?? proc.signalCode}):\n${log}`);
      if (await healthy(clientPort, tls)) return;
      if (Date.now() > deadline) throw new Error(`etcd did not become healthy on ${url}:\n${log}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  const stop = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => {
    const proc = child;
    if (proc === undefined) return;
    child = undefined;
    if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
    await exited;
  };

  try {
    await launch();
  } catch (error) {
    await stop();
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  return {
    url,
    clientPort,
    dataDir,
    pid: () => child?.pid,
    stop,
    start: async () => {
      if (child !== undefined) throw new Error('etcd is already running');
      await launch();
    },
    close: async () => {
      await stop();
      await rm(dataDir, { recursive: true, force: true });
    },
    output: () => log,
  };
}
