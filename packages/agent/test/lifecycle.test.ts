// svc-agent as a supervised system application: a dead daemon is a clear 502 and service resumes
// when the daemon is back; svcd restarts an agent killed with SIGKILL; the Prometheus exporter is off
// unless SVC_METRICS_PORT is set, and when on its series are present and move.
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, restClient, startTestDaemon, wsClient, type TestDaemon } from '@svc/testkit';
import { openWs, processOf, waitFor } from './helpers.ts';

const daemons: TestDaemon[] = [];
afterEach(async () => {
  // Newest first: a restarted daemon on a reused home stops before the first one removes the home.
  for (const d of daemons.splice(0).reverse()) await d.close();
});

async function start(options: Parameters<typeof startTestDaemon>[0] = {}): Promise<TestDaemon> {
  const d = await startTestDaemon({ agent: true, ...options });
  daemons.push(d);
  return d;
}

/** The exporter's text, and the value of one series (sum over the lines that start with `prefix`). */
async function scrape(port: number): Promise<{ text: string; value: (prefix: string) => number }> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/plain');
  const text = await response.text();
  return {
    text,
    value: (prefix) =>
      text
        .split('\n')
        .filter((line) => line.startsWith(prefix))
        .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0),
  };
}

describe('daemon down', () => {
  it('answers 502 upstream_unavailable (HTTP and WSS) and recovers when the daemon is back', async () => {
    // Fixed ports: the daemon must come back where the agent looks for it, and clients keep the
    // agent's base URL (a new daemon restarts system apps adopted from its predecessor, so that they
    // run with its settings: the agent returns on its configured port).
    const restPort = await freePort();
    const env = { SVC_REST_PORT: String(restPort), SVC_AGENT_PORT: String(await freePort()) };
    const first = await start({ env });
    const { agentUrl } = await first.agent();
    const via = restClient(agentUrl, first.ca);
    const admin = await first.token('admin');
    expect((await via.call('GET', '/svc/self', { token: admin })).status).toBe(200);

    await first.stop(); // managed processes, the agent among them, keep running
    const down = await via.call('GET', '/svc/self', { token: admin });
    expect(down.status).toBe(502);
    expect(down.json()).toEqual({
      error: 'upstream_unavailable',
      message: 'the agent cannot reach svcd; retry when the daemon is back',
    });
    await expect(
      openWs(agentUrl, first.ca, ['svc-ws'], { authorization: `Bearer ${admin}` }),
    ).rejects.toMatchObject({
      status: 502,
    });

    const second = await start({ env, home: first.home, issuer: first.issuer });
    expect(second.restPort).toBe(restPort);
    const back = await waitFor(
      async () => {
        const r = await via.call('GET', '/svc/self', { token: admin });
        return r.status === 200 ? r : undefined;
      },
      { what: 'the agent to reach the restarted daemon', timeoutMs: 20_000, intervalMs: 50 },
    );
    expect(back.json()).toMatchObject({ principal_id: 'test-admin' });
    expect((await second.agent()).agentUrl).toBe(agentUrl);
  });
});

describe('listening on every address (the container image)', () => {
  it('reaches a daemon bound to 0.0.0.0 on loopback, verifying its certificate', async () => {
    const d = await start({ env: { SVC_LISTEN_ADDRESS: '0.0.0.0' } });
    const { agentUrl } = await d.agent();
    const r = await restClient(agentUrl, d.ca).call('GET', '/svc/self', { token: await d.token('viewer') });
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ principal_id: 'test-viewer' });
  });
});

describe('supervision and metrics', () => {
  it('has no exporter unless SVC_METRICS_PORT is set', async () => {
    const d = await start();
    const { metricsPort } = await d.agent();
    expect(metricsPort).toBeUndefined();
    const ports = await d.ports();
    expect(ports['agent']).toBeGreaterThan(0);
    expect(ports).not.toHaveProperty('metrics');
    // svcd still serves its own text: to the agent's key and to host-resource-view bearers.
    const agent = await processOf(d, 'agent');
    const byKey = await d.rest().call('GET', '/svc/metrics', { headers: { 'x-svc-process-key': agent.key } });
    expect(byKey.status).toBe(200);
    const admin = await d.rest().call('GET', '/svc/metrics', { token: await d.token('admin') });
    expect(admin.status).toBe(200);
    expect(admin.text()).toContain('svc_requests_total');
  });

  it('exports svcd and agent series that move; svcd restarts the agent after kill -9 and counts it', async () => {
    const d = await start({ env: { SVC_METRICS_PORT: '0' } });
    const first = await d.agent();
    expect(first.metricsPort).toBeGreaterThan(0);
    const admin = await d.token('admin');
    const via = restClient(first.agentUrl, d.ca);

    expect((await via.call('GET', '/svc/self', { token: admin })).status).toBe(200);
    const before = await scrape(first.metricsPort!);
    for (const series of [
      'svc_requests_total',
      'svc_request_duration_seconds_bucket',
      'svc_apps{state="running"}',
      'svc_app_memory_bytes{app="agent"}',
      'svc_app_cpu_percent{app="agent"}',
      'svc_connections',
      'svc_agent_requests_total',
      'svc_agent_connections',
      'svc_agent_daemon_scrape_up 1',
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'svcd_process_cpu_seconds_total',
      'svcd_nodejs_heap_size_used_bytes',
    ])
      expect(before.text, series).toContain(series);
    // Every series name appears once as TYPE: the two registries never collide.
    const types = before.text.split('\n').filter((line) => line.startsWith('# TYPE '));
    expect(new Set(types).size).toBe(types.length);
    expect(before.value('svc_app_memory_bytes{app="agent"}')).toBeGreaterThan(0);

    // Requests through the agent, an app, an event subscription over WSS through the agent.
    const selfRoute = 'svc_requests_total{route="/svc/self",method="GET",status="200",transport="rest"}';
    for (let i = 0; i < 3; i++)
      expect((await via.call('GET', '/svc/self', { token: admin })).status).toBe(200);
    const ws = await wsClient(first.agentUrl, d.ca, admin);
    const reg = await ws.call('PUT', '/svc/app/metered', {
      token: admin,
      query: { subscribe_events: 'START' },
      body: { command: 'sleep 600' },
    });
    expect(reg.status).toBe(200);
    const during = await waitFor(
      async () => {
        const s = await scrape(first.metricsPort!);
        return s.value('svc_event_deliveries_total{type="START"}') >= 1 ? s : undefined;
      },
      { what: 'a START delivery counted' },
    );
    expect(during.value(selfRoute)).toBe(before.value(selfRoute) + 3);
    expect(
      during.value('svc_agent_requests_total{upstream="daemon",transport="rest",status="200"}'),
    ).toBeGreaterThanOrEqual(
      before.value('svc_agent_requests_total{upstream="daemon",transport="rest",status="200"}') + 3,
    );
    expect(during.value('svc_apps{state="running"}')).toBe(before.value('svc_apps{state="running"}') + 1);
    expect(during.value('svc_connections{transport="wss"}')).toBeGreaterThanOrEqual(1);
    await ws.close();

    // kill -9: svcd starts a new agent (exit: restart), which reports its new ports.
    const killed = await processOf(d, 'agent');
    process.kill(killed.pid, 'SIGKILL');
    const second = await d.agent(first.agentPort);
    expect(second.agentPort).not.toBe(first.agentPort);
    const restarted = await processOf(d, 'agent');
    expect(restarted.pid).not.toBe(killed.pid);
    expect(restarted.key).not.toBe(killed.key);
    expect((await restClient(second.agentUrl, d.ca).call('GET', '/svc/self', { token: admin })).status).toBe(
      200,
    );
    const after = await scrape(second.metricsPort!);
    expect(after.value('svc_app_restarts_total{app="agent"}')).toBe(1);
    expect(after.text).toContain('svc_agent_daemon_scrape_up 1');
  });
});
