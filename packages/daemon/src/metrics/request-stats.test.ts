// RequestStats renders exactly what prom-client's own Counter and Histogram render for the same
// requests, and stays bounded against free-form method names.
import { Counter, Histogram, Registry, type Metric } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RequestStats } from './request-stats.ts';

const BUCKETS = [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30];
const names = {
  requestsName: 'svc_requests_total',
  requestsHelp: 'requests',
  durationName: 'svc_request_duration_seconds',
  durationHelp: 'latency',
};

describe('RequestStats', () => {
  it('renders like prom-client Counter and Histogram', async () => {
    const reference = new Registry();
    const counter = new Counter({
      name: names.requestsName,
      help: names.requestsHelp,
      labelNames: ['route', 'method', 'status', 'transport'] as const,
      registers: [reference],
    });
    const histogram = new Histogram({
      name: names.durationName,
      help: names.durationHelp,
      labelNames: ['route', 'transport'] as const,
      buckets: BUCKETS,
      registers: [reference],
    });
    const registry = new Registry();
    const stats = new RequestStats({ ...names, buckets: BUCKETS });
    registry.registerMetric(stats.requests as unknown as Metric);
    registry.registerMetric(stats.duration as unknown as Metric);
    const requests: [string, string, number, string, number][] = [
      ['/svc/self', 'GET', 200, 'tcp', 0.0002],
      ['/svc/self', 'GET', 200, 'tcp', 0.0005],
      ['/svc/app/{name}/task', 'POST', 200, 'wss', 0.003],
      ['/svc/app/{name}/task', 'POST', 408, 'wss', 60],
      ['unmatched', 'PATCH', 404, 'rest', 0.0007],
      ['/svc/self', 'GET', 401, 'tcp', 1],
    ];
    for (const [route, method, status, transport, seconds] of requests) {
      stats.record(route, method, status, transport, seconds);
      counter.inc({ route, method, status: String(status), transport });
      histogram.observe({ route, transport }, seconds);
    }
    expect(await registry.metrics()).toBe(await reference.metrics());
  });

  it('keeps at most 4096 series: further methods count as "other"', async () => {
    const stats = new RequestStats({ ...names, buckets: BUCKETS });
    for (let i = 0; i < 5000; i++) stats.record('unmatched', `M${i}`, 404, 'tcp', 0.001);
    const { values } = await stats.requests.get();
    expect(values.length).toBeLessThanOrEqual(4097);
    const other = values.find((v) => v.labels['method'] === 'other');
    expect(other?.value).toBe(5000 - 4096);
    const total = values.reduce((sum, v) => sum + v.value, 0);
    expect(total).toBe(5000);
  });
});
