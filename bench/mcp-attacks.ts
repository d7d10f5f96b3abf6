// Issue 25 rows M1 and M2 against a real builtin svcd + svc-identity + svc-agent (ephemeral ports),
// as figures (the regression tests in packages/mcp/test/security assert the bounds):
//   M1  MCP subscriptions (APPS applications × SESSIONS sessions of one principal) to the output of
//       applications whose process has exited, then of applications running quietly: the agent's
//       and svcd's CPU time (/proc/<pid>/stat utime+stime) and svcd's output requests across a
//       window in which nothing is written. As the administrator (who may subscribe to events) and
//       as a viewer (who may not: `--as viewer`).
//   M2  17 role-less principals × 16 `initialize`, then 17 viewers × 16: sessions admitted per
//       principal, answers, and whether the administrator still gets a session.
//   npx node bench/mcp-attacks.ts [--apps 4] [--sessions 8] [--window 10] [--as admin|viewer] [--only m1,m2]
import { readFileSync } from 'node:fs';
import { startServedDaemon, waitFor } from '@svc/testkit';
import { passwordToken, RawMcp } from '@svc/mcp/testing';

const args = process.argv.slice(2);
const option = (name: string, fallback: string): string => {
  const at = args.indexOf(`--${name}`);
  return at < 0 ? fallback : (args[at + 1] ?? fallback);
};
const APPS = Number(option('apps', '4'));
const SESSIONS = Number(option('sessions', '8'));
const WINDOW_S = Number(option('window', '10'));
const AS = option('as', 'admin');
const ONLY = option('only', 'm1,m2');
const CROWD = 17;
const PER_PRINCIPAL = 16;
const TICKS = 100; // USER_HZ

const { daemon, info, users } = await startServedDaemon({
  agent: true,
  builtin: true,
  tokenTtlSeconds: 900,
  users: [
    ...Array.from({ length: CROWD }, (_, i) => ({ email: `nobody${i}@svc.local`, roles: [] })),
    ...Array.from({ length: CROWD }, (_, i) => ({ email: `viewer${i}@svc.local`, roles: ['svc-viewer'] })),
  ],
});
const rest = daemon.rest();
const admin = info.tokens['svc-admin'];
const mcp = new RawMcp(`${info.agent!}/mcp`, readFileSync(info.ca, 'utf8'));

function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
}

async function outputRequests(): Promise<number> {
  const text = (await rest.call('GET', '/svc/metrics', { token: admin })).text();
  let total = 0;
  for (const line of text.split('\n'))
    if (line.startsWith('svc_requests_total{') && line.includes('route="/svc/app/{name}/output"'))
      total += Number(line.split(' ').at(-1));
  return total;
}

async function measure(label: string, agentPid: number, subscriptions: number): Promise<void> {
  const ticks0 = cpuTicks(agentPid);
  const daemonTicks0 = cpuTicks(daemon.pid);
  const requests0 = await outputRequests();
  const t0 = Date.now();
  await new Promise((resolve) => setTimeout(resolve, WINDOW_S * 1000));
  const seconds = (Date.now() - t0) / 1000;
  const cpu = (cpuTicks(agentPid) - ticks0) / TICKS;
  const daemonCpu = (cpuTicks(daemon.pid) - daemonTicks0) / TICKS;
  const requests = (await outputRequests()) - requests0;
  const share = (s: number): string => `${((100 * s) / seconds).toFixed(1)}%`;
  const each =
    subscriptions === 0
      ? ''
      : `, ${((1000 * 60 * cpu) / subscriptions / seconds).toFixed(2)} ms per subscription per minute`;
  console.log(
    `M1 ${label}: ${seconds.toFixed(1)} s; agent CPU ${cpu.toFixed(2)} s (${share(cpu)} of a core${each}), ` +
      `svcd CPU ${daemonCpu.toFixed(2)} s (${share(daemonCpu)}); svcd output requests ${requests} (${(requests / seconds).toFixed(1)}/s)`,
  );
}

/** SESSIONS sessions of `token`, each subscribed to the output of every app named `prefix-<i>`. */
async function subscribe(token: string, prefix: string, sessions: string[]): Promise<number> {
  let subscribed = 0;
  for (let s = 0; s < SESSIONS; s += 1) {
    const session = await mcp.open(token);
    if (session.sessionId === undefined) throw new Error(`initialize: ${session.status}`);
    sessions.push(session.sessionId);
    for (let a = 0; a < APPS; a += 1, subscribed += 1) {
      const answer = await mcp.request(token, session.sessionId, 'resources/subscribe', {
        uri: `svc://app/${prefix}-${a}/output`,
      });
      if (answer.message?.error !== undefined) throw new Error(`subscribe: ${answer.message.error.message}`);
    }
  }
  return subscribed;
}

async function register(prefix: string, command: string): Promise<void> {
  for (let a = 0; a < APPS; a += 1) {
    // permission 21: others may read (the viewer's output subscriptions).
    const put = await rest.call('PUT', `/svc/app/${prefix}-${a}`, {
      token: admin,
      body: { command, behavior: { exit: 'standby' }, permission: 21 },
    });
    if (put.status !== 200) throw new Error(`register: ${put.status} ${put.text()}`);
  }
}

async function m1(): Promise<void> {
  const agentPid = (await rest.call('GET', '/svc/app/agent', { token: admin })).json<{ pid: number }>().pid;
  const token = AS === 'viewer' ? info.tokens['svc-viewer'] : admin;
  await register('exited', 'echo done');
  for (let a = 0; a < APPS; a += 1)
    await waitFor(
      async () =>
        (await rest.call('GET', `/svc/app/exited-${a}/output`, { token: admin })).headers['x-exit-code'] !==
        undefined,
      { what: 'the application to exit', timeoutMs: 30_000, intervalMs: 50 },
    );
  await register('quiet', 'sleep 3600');
  await measure('no subscription', agentPid, 0);
  const sessions: string[] = [];
  const exited = await subscribe(token, 'exited', sessions);
  await measure(
    `${exited} subscriptions (${AS}, ${SESSIONS} sessions) to exited applications`,
    agentPid,
    exited,
  );
  for (const id of sessions.splice(0)) await mcp.end(token, id);
  const quiet = await subscribe(token, 'quiet', sessions);
  await measure(`${quiet} subscriptions (${AS}) to applications running without output`, agentPid, quiet);
  for (const id of sessions.splice(0)) await mcp.end(token, id);
}

async function flood(label: string, tokens: string[]): Promise<void> {
  const admitted: number[] = tokens.map(() => 0);
  const statuses = new Map<number, number>();
  await Promise.all(
    tokens.map(async (token, i) => {
      for (let k = 0; k < PER_PRINCIPAL; k += 1) {
        const answer = await mcp.open(token);
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        if (answer.status === 200) admitted[i]! += 1;
      }
    }),
  );
  const adminAnswer = await mcp.open(admin);
  console.log(
    `M2 ${label}: ${tokens.length} principals × ${PER_PRINCIPAL} initialize → ${admitted.reduce((a, b) => a + b, 0)} admitted ` +
      `(per principal ${admitted.join(',')}); answers ${JSON.stringify(Object.fromEntries(statuses))}; ` +
      `administrator's initialize then: HTTP ${adminAnswer.status}`,
  );
}

try {
  if (ONLY.includes('m1')) await m1();
  if (ONLY.includes('m2')) {
    const tokens = await Promise.all(users.map((u) => passwordToken(info.auth!, mcp.dispatcher, u)));
    await flood('role-less crowd', tokens.slice(0, CROWD));
    await flood('viewer crowd', tokens.slice(CROWD));
  }
} finally {
  await mcp.close();
  await daemon.close();
}
