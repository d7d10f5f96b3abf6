import { describe, expect, it } from 'vitest';
import { Router } from '../api/router.ts';
import { EMPTY_BODY } from '../api/request-body.ts';
import type { ApiRequest, ApiResponse, Operation } from '../api/types.ts';
import type { AppView, SupervisorApi, SupervisorEvent } from '../supervisor/types.ts';
import { DaemonMetrics } from './daemon-metrics.ts';

const ok = (status: number): ApiResponse => ({
  status,
  headers: {},
  contentType: 'application/json',
  body: new Uint8Array(),
});
const operation: Operation = {
  id: 'getApp',
  method: 'GET',
  path: '/svc/app/{name}',
  access: { kind: 'public' },
  summary: '',
  responses: [{ status: 200, description: 'ok', media: 'none' }],
  handle: () => Promise.resolve(ok(200)),
};
const request = (path: string): ApiRequest => ({
  method: 'GET',
  path,
  query: {},
  headers: {},
  body: EMPTY_BODY,
  transport: 'rest',
  remoteAddress: '127.0.0.1',
  connection: undefined,
});

/** A supervisor twin: a fixed app list and an event source the test drives. */
function supervisorTwin(apps: AppView[]): { api: SupervisorApi; emit: (e: SupervisorEvent) => void } {
  const listeners: ((e: SupervisorEvent) => void)[] = [];
  const api = {
    list: () => apps,
    onEvent: (listener: (e: SupervisorEvent) => void) => {
      listeners.push(listener);
      return () => undefined;
    },
  } as unknown as SupervisorApi;
  return { api, emit: (e) => listeners.forEach((l) => l(e)) };
}

describe('DaemonMetrics', () => {
  it('labels requests by the path template, never the raw path; unmatched paths by a constant', async () => {
    const metrics = new DaemonMetrics();
    const dispatch = metrics.instrument(new Router([operation]), (r) =>
      Promise.resolve(ok(r.path.startsWith('/svc/app/') ? 200 : 404)),
    );
    await dispatch(request('/svc/app/secret-name'));
    await dispatch(request('/svc/other/secret-path'));
    const { text } = await metrics.render();
    expect(text).toContain(
      'svc_requests_total{route="/svc/app/{name}",method="GET",status="200",transport="rest"} 1',
    );
    expect(text).toContain(
      'svc_requests_total{route="unmatched",method="GET",status="404",transport="rest"} 1',
    );
    expect(text).not.toContain('secret');
  });

  it('counts apps by state, memory and cpu from the supervisor, and restarts after an exit', async () => {
    const metrics = new DaemonMetrics();
    const { api, emit } = supervisorTwin([
      { name: 'a', memory: 1024, cpu: 12.5 },
      { name: 'b' },
      { name: 'c' },
    ]);
    const states: Record<string, string> = { a: 'running', b: 'running', c: 'stopped' };
    metrics.attachSupervisor(api, (name) => states[name]);
    emit({ type: 'START', app: 'a', pid: 1, processUuid: 'u1' });
    emit({
      type: 'EXIT',
      app: 'a',
      pid: 1,
      exitCode: 1,
      lastError: undefined,
      processUuid: 'u1',
    });
    emit({ type: 'START', app: 'a', pid: 2, processUuid: 'u2' });
    emit({ type: 'START', app: 'b', pid: 3, processUuid: 'u3' });
    const { text } = await metrics.render();
    expect(text).toContain('svc_apps{state="running"} 2');
    expect(text).toContain('svc_apps{state="stopped"} 1');
    expect(text).toContain('svc_app_memory_bytes{app="a"} 1024');
    expect(text).toContain('svc_app_cpu_percent{app="a"} 12.5');
    expect(text).toContain('svc_app_restarts_total{app="a"} 1');
    expect(text).not.toContain('svc_app_restarts_total{app="b"}');
  });
});
