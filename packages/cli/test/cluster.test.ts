// `svc cluster` and `svc nodes` end to end: one real etcd and one real svcd node (main and worker,
// so it leads, schedules and runs the task), driven through the real `svc` binary.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEtcd, startTestDaemon, type TestDaemon, type TestEtcd } from '@svc/testkit';
import { svcEnv, type SvcEnv } from './helpers.ts';

let etcd: TestEtcd;
let daemon: TestDaemon;
let svc: SvcEnv;
beforeAll(async () => {
  etcd = await startEtcd();
  daemon = await startTestDaemon({
    env: { SVC_REGISTRY_URL: etcd.url, SVC_HOST_NAME: 'cli-node' },
    files: { 'config/config.yaml': 'Registry:\n  IsMainNode: true\n  IsWorkerNode: true\n  SessionTTL: 3\n' },
  });
  svc = await svcEnv({ SVC_HOME: daemon.home, SVC_BEARER_TOKEN: await daemon.token('admin') });
}, 120_000);
afterAll(async () => {
  await svc?.cleanup();
  await daemon?.close();
  await etcd?.close();
}, 60_000);

/** Re-runs `args` until its stdout matches (bounded): the schedule is asynchronous. */
async function until(args: string[], pattern: RegExp, timeoutMs = 30_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await svc.run(['-H', daemon.restUrl, ...args]);
    if (r.code === 0 && pattern.test(r.stdout)) return r.stdout;
    if (Date.now() > deadline) throw new Error(`svc ${args.join(' ')}: ${r.stdout}${r.stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

it('svc nodes lists the node, leading and a worker', async () => {
  const out = await until(['nodes'], /cli-node\s+leader\s+yes/);
  expect(out).toMatch(/^HOST\s+ROLE\s+WORKER\s+CPUS\s+MEMORY\s+ADDRESS/);
  const json = await until(['nodes', '-o', 'json'], /cli-node/);
  expect(JSON.parse(json)).toHaveProperty(['cli-node', 'label', 'HOST_NAME'], 'cli-node');
});

it('svc cluster add -f, ls, rm: the task is placed, runs in svc ls, then goes', async () => {
  const file = join(svc.configDir, 'web.yaml');
  await writeFile(file, 'name: cli-web\nreplication: 1\ncontent:\n  command: sleep 600\n');
  const add = await svc.run(['-H', daemon.restUrl, 'cluster', 'add', '-f', file]);
  expect(add.code, add.stderr).toBe(0);
  expect(add.stdout).toMatch(/cluster\/cli-web defined/);
  await until(['cluster', 'ls'], /cli-web\s+1\/1\s+-\s+-\s+cli-node/);
  const ls = JSON.parse(await until(['ls', '-o', 'json'], /"cli-web"/)) as Record<string, unknown>[];
  expect(ls.find((app) => app['name'] === 'cli-web')).toMatchObject({ cluster: true });
  // Not editable locally.
  const localRm = await svc.run(['-H', daemon.restUrl, 'rm', 'cli-web']);
  expect(localRm.code).not.toBe(0);
  expect(localRm.stderr).toMatch(/managed by the cluster/);
  const rm = await svc.run(['-H', daemon.restUrl, 'cluster', 'rm', 'cli-web']);
  expect(rm.code, rm.stderr).toBe(0);
  await until(['ls', '-o', 'json'], /^(?![\s\S]*"cli-web")/);
  await until(['cluster', 'ls'], /No cluster applications|^(?![\s\S]*cli-web)/);
});

it('refuses bad usage before calling the daemon', async () => {
  const missing = await svc.run(['-H', daemon.restUrl, 'cluster', 'add']);
  expect(missing.code).not.toBe(0);
  expect(missing.stderr).toMatch(/missing -f/);
  const bad = await svc.run(['-H', daemon.restUrl, 'cluster', 'rm', '../x']);
  expect(bad.stderr).toMatch(/invalid application name/);
  const unknown = await svc.run(['-H', daemon.restUrl, 'cluster', 'frob']);
  expect(unknown.stderr).toMatch(/unknown cluster command/);
});
