// Issue 25 rows M1 and M2 against a real builtin svcd + svc-identity + svc-agent (ephemeral ports),
// as figures (the regression tests in packages/mcp/test/security assert the bounds):
//   M1  N MCP subscriptions to the output of an application whose process has exited: the agent's
//       CPU time (/proc/<pid>/stat utime+stime) and svcd's output requests across a quiet window.
//   M2  17 role-less principals × 16 `initialize`, then the administrator: sessions admitted per
//       principal and whether the administrator still gets one.
//   npx node bench/mcp-attacks.ts [--subscriptions 32] [--window 10] [--only m1|m2]
import { readFileSync } from 'node:fs';
import { startServedDaemon, waitFor } from '@svc/testkit';
import { passwordToken, RawMcp } from '../packages/mcp/test/security/mcp-raw.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: string): string => {
  const at = args.indexOf(`--${name}`);
  return at < 0 ? fallback : (args[at + 1] ?? fallback);
};
const SUBSCRIPTIONS = Number(option('subscriptions', '32'));
const WINDOW_S = Number(option('window', '10'));
const ONLY = option('only', 'm1,m2');
const ROLELESS = 17;
const PER_PRINCIPAL = 16;
const TICKS = 100; // USER_HZ

const roleless = Array.from({ length: ROLELESS }, (_, i) => ({ email: `nobody${i}@svc.local`, roles: [] }));
const { daemon, info, users } = await startServedDaemon({
  agent: true,
  builtin: true,
  tokenTtlSeconds: 900,
  users: roleless,
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

try {
  const agentPid = (await rest.call('GET', '/svc/app/agent', { token: admin })).json<{ pid: number }>().pid;
  if (ONLY.includes('m1')) {
    // APPS applications that ran and exited; each session subscribes to each of them.
    const APPS = 4;
    for (let a = 0; a < APPS; a += 1) {
      const put = await rest.call('PUT', `/svc/app/m1-exited-${a}`, {
        token: admin,
        body: { command: 'echo done', behavior: { exit: 'standby' } },
      });
      if (put.status !== 200) throw new Error(`register: ${put.status} ${put.text()}`);
      await waitFor(
        async () =>
          (await rest.call('GET', `/svc/app/m1-exited-${a}/output`, { token: admin })).headers[
            'x-exit-code'
          ] !== undefined,
        { what: 'the application to exit', timeoutMs: 30_000, intervalMs: 50 },
      );
    }
    const measure = async (label: string): Promise<void> => {
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
      console.log(
        `M1 ${label}: in ${seconds.toFixed(1)} s agent CPU ${cpu.toFixed(2)} s (${share(cpu)} of a core), ` +
          `svcd CPU ${daemonCpu.toFixed(2)} s (${share(daemonCpu)}); svcd output requests ${requests} (${(requests / seconds).toFixed(1)}/s)`,
      );
    };
    // The baseline: one session, nothing subscribed.
    const baseline = await mcp.open(admin);
    if (baseline.sessionId === undefined) throw new Error(`initialize: ${baseline.status}`);
    await measure('0 subscriptions');
    let subscribed = 0;
    let sessions = 0;
    while (subscribed < SUBSCRIPTIONS) {
      const session = await mcp.open(admin);
      if (session.sessionId === undefined) throw new Error(`initialize: ${session.status}`);
      sessions += 1;
      for (let a = 0; a < APPS && subscribed < SUBSCRIPTIONS; a += 1, subscribed += 1) {
        const answer = await mcp.request(admin, session.sessionId, 'resources/subscribe', {
          uri: `svc://app/m1-exited-${a}/output`,
        });
        if (answer.message?.error !== undefined)
          throw new Error(`subscribe: ${answer.message.error.message}`);
      }
    }
    await measure(`${subscribed} subscriptions (${sessions} sessions) to exited applications`);
    console.log(`M1 agent pid ${agentPid}`);
  }
  if (ONLY.includes('m2')) {
    const tokens = await Promise.all(users.map((u) => passwordToken(info.auth!, mcp.dispatcher, u)));
    const admitted = new Map<number, number>();
    const statuses = new Map<number, number>();
    await Promise.all(
      tokens.map(async (token, i) => {
        for (let k = 0; k < PER_PRINCIPAL; k += 1) {
          const answer = await mcp.open(token);
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          if (answer.status === 200) admitted.set(i, (admitted.get(i) ?? 0) + 1);
        }
      }),
    );
    const total = [...admitted.values()].reduce((a, b) => a + b, 0);
    console.log(
      `M2 flood: ${ROLELESS} role-less principals × ${PER_PRINCIPAL} initialize → ${total} sessions admitted ` +
        `(per principal: ${[...admitted.values()].join(',') || 'none'}); answers ${JSON.stringify(Object.fromEntries(statuses))}`,
    );
    const adminAnswer = await mcp.open(admin);
    console.log(`M2 admin initialize during the flood: HTTP ${adminAnswer.status}`);
    const viewerAnswer = await mcp.open(info.tokens['svc-viewer']);
    console.log(`M2 viewer initialize during the flood: HTTP ${viewerAnswer.status}`);
  }
} finally {
  await mcp.close();
  await daemon.close();
}
