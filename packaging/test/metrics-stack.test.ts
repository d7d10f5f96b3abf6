// The packaged metrics stack against a real svcd (builtin mode, agent exporter on) and a real
// Prometheus (Debian's `prometheus`): the refresher mints the automation token into an owner-only
// file and refreshes it, Prometheus scrapes svcd's /svc/metrics with that bearer and the agent's
// exporter, both targets are up, the series the dashboard draws exist, and every dashboard query is
// valid PromQL that Prometheus evaluates.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import {
  BUILTIN_MODE_ENV,
  freePort,
  restClient,
  startTestDaemon,
  waitFor,
  type TestDaemon,
} from '@svc/testkit';

const REPO = resolve(import.meta.dirname, '../..');
const METRICS = join(REPO, 'packaging/metrics');
const PROMETHEUS = process.env['SVC_TEST_PROMETHEUS'] ?? '/usr/bin/prometheus';

let daemon: TestDaemon;
let dir: string;
let refresher: ChildProcess;
let refresherLog = '';
let prometheus: ChildProcess;
let prometheusLog = '';
let api: string;
let agentUrl: string;

/** A bounded wait whose failure also shows what the refresher and Prometheus said. */
function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  return waitFor(probe, { what, timeoutMs, intervalMs: 100 }).catch((error: Error) => {
    throw new Error(
      `${error.message}\nrefresher:\n${refresherLog.slice(-2000)}\nprometheus:\n${prometheusLog.slice(-2000)}`,
      { cause: error },
    );
  });
}

/** `script/svc-auth.sh` of the checkout against the daemon's SVC_HOME (stdin carries secrets). */
function authScript(args: string[], stdin = ''): Promise<string> {
  return new Promise((done, reject) => {
    const child = spawn(join(REPO, 'script/svc-auth.sh'), args, {
      env: { PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_HOME: daemon.home },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.on('close', (code) =>
      code === 0 ? done(stdout) : reject(new Error(`svc-auth.sh ${args[0]}: ${stderr}`)),
    );
    child.stdin.end(stdin);
  });
}

async function adminToken(): Promise<string> {
  return (await authScript(['user-token'], await authScript(['print-initial-password']))).trim();
}

async function query<T>(path: string): Promise<T> {
  const response = await fetch(`${api}${path}`);
  const body = (await response.json()) as { status: string; data: T; error?: string };
  if (body.status !== 'success') throw new Error(`${path}: ${body.error ?? response.status}`);
  return body.data;
}

beforeAll(async () => {
  daemon = await startTestDaemon({
    agent: true,
    env: { ...BUILTIN_MODE_ENV, SVC_METRICS_PORT: '0' },
    files: { 'apps/identity.yaml': await readFile(join(REPO, 'apps', 'identity.yaml'), 'utf8') },
  });
  const agent = await daemon.agent();
  agentUrl = agent.agentUrl;
  dir = await mkdtemp(join(tmpdir(), 'svc-metrics-'));
  // The refresher as a loop every 2 s (the timer runs it every 5 minutes on an installed host).
  refresher = spawn(
    join(METRICS, 'svc-metrics-token.sh'),
    ['--dir', join(dir, 'token-dir'), '--every', '2'],
    {
      env: { PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_HOME: daemon.home },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  refresher.stdout!.on('data', (c: Buffer) => (refresherLog += c.toString('utf8')));
  refresher.stderr!.on('data', (c: Buffer) => (refresherLog += c.toString('utf8')));
  await until('the first token', async () =>
    statSync(join(dir, 'token-dir/token')).size > 0 ? true : undefined,
  );

  // The packaged configuration, pointed at this daemon's ports and files, scraping every second.
  const config = YAML.parse(readFileSync(join(METRICS, 'prometheus.yml'), 'utf8')) as {
    global: Record<string, string>;
    scrape_configs: {
      job_name: string;
      static_configs: { targets: string[] }[];
      authorization?: { credentials_file: string };
      tls_config?: { ca_file: string };
    }[];
  };
  config.global['scrape_interval'] = '1s';
  for (const job of config.scrape_configs) {
    if (job.job_name === 'svcd') {
      job.static_configs = [{ targets: [`127.0.0.1:${daemon.restPort}`] }];
      job.authorization!.credentials_file = join(dir, 'token-dir/token');
      job.tls_config!.ca_file = join(dir, 'token-dir/ca.pem');
    } else job.static_configs = [{ targets: [`127.0.0.1:${agent.metricsPort!}`] }];
  }
  await writeFile(join(dir, 'prometheus.yml'), YAML.stringify(config));
  const port = await freePort();
  api = `http://127.0.0.1:${port}/api/v1`;
  prometheus = spawn(
    PROMETHEUS,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  prometheus.stdout!.on('data', (c: Buffer) => (prometheusLog += c.toString('utf8')));
  prometheus.stderr!.on('data', (c: Buffer) => (prometheusLog += c.toString('utf8')));
}, 120_000);

afterAll(async () => {
  refresher?.kill('SIGTERM');
  prometheus?.kill('SIGTERM');
  await Promise.all(
    [refresher, prometheus].map(
      (child) =>
        new Promise((done) =>
          child === undefined || child.exitCode !== null ? done(0) : child.once('exit', done),
        ),
    ),
  );
  await daemon?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe('the packaged metrics stack', () => {
  it('the refresher writes an owner-only token and the CA, and refreshes the token', async () => {
    const file = join(dir, 'token-dir/token');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'token-dir/ca.pem')).mode & 0o777).toBe(0o644);
    const first = readFileSync(file, 'utf8');
    expect(first).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+\n?$/);
    // The token is never printed.
    expect(refresherLog).not.toContain(first.trim());
    await until('a refreshed token', async () => (readFileSync(file, 'utf8') !== first ? true : undefined));
    expect(refresherLog).toMatch(/refreshed/);
  });

  it('Prometheus scrapes svcd with the bearer from the file and the agent exporter: both targets up', async () => {
    const targets = await until('both targets up', async () => {
      const data = await query<{
        activeTargets: { labels: { job: string }; health: string; lastError: string }[];
      }>('/targets');
      const up = data.activeTargets.filter((t) => t.health === 'up').map((t) => t.labels.job);
      return up.includes('svcd') && up.includes('svc-agent') ? data.activeTargets : undefined;
    });
    expect(targets.map((t) => t.lastError)).toEqual(['', '']);
  });

  it('the series of the dashboard exist and every dashboard query evaluates', async () => {
    // Make every figure move: a rejected token, a crashing app that restarts, some requests.
    const rest = daemon.rest();
    expect((await rest.call('GET', '/svc/applications', { token: 'not.a.token' })).status).toBe(401);
    const admin = await adminToken();
    expect(
      (await rest.call('PUT', '/svc/app/crasher', { token: admin, body: { command: 'sh -c "exit 3"' } }))
        .status,
    ).toBe(200);
    // Through the agent too (its own request counter).
    const viaAgent = restClient(agentUrl, daemon.ca);
    expect((await viaAgent.call('GET', '/svc/applications', { token: admin })).status).toBe(200);
    const names = [
      'svc_apps',
      'svc_requests_total',
      'svc_request_duration_seconds_bucket',
      'svc_tasks',
      'svc_token_rejections_total',
      'svc_app_restarts_total',
      'svc_connections',
      'svc_agent_requests_total',
    ];
    let missing: string[] = [];
    await until('every series', async () => {
      const present = await query<string[]>('/label/__name__/values');
      missing = names.filter((name) => !present.includes(name));
      return missing.length === 0 ? true : undefined;
    }).catch((error: Error) => {
      throw new Error(`missing ${missing.join(', ')}: ${error.message}`);
    });
    const dashboard = JSON.parse(readFileSync(join(METRICS, 'grafana-dashboard.json'), 'utf8')) as {
      panels: { title: string; targets: { expr: string }[] }[];
    };
    expect(dashboard.panels.length).toBeGreaterThanOrEqual(8);
    for (const panel of dashboard.panels)
      for (const target of panel.targets) {
        const result = await query<{ resultType: string }>(`/query?query=${encodeURIComponent(target.expr)}`);
        expect(result.resultType, panel.title).toBe('vector');
      }
    const apps = await query<{ result: { metric: { state: string } }[] }>(
      `/query?query=${encodeURIComponent('svc_apps{job="svcd"}')}`,
    );
    expect(apps.result.length).toBeGreaterThan(0);
  }, 90_000);
});
