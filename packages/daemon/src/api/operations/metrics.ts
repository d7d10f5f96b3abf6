// GET /svc/metrics: svcd's Prometheus text, read by svc-agent's exporter. Not public (it names every
// application); its one credential is the process key of the system application `agent` over a
// direct loopback connection — the same rule as the worker task RPC — so no bearer role can read it
// and no network path can (docs/decisions.md "Metrics").
import { SvcError } from '@svc/protocol';
import type { Services } from '../services.ts';
import { defineOperation, type Operation } from '../types.ts';

export const metricsOperations: readonly Operation<Services>[] = [
  defineOperation<Services>({
    id: 'getMetrics',
    method: 'GET',
    path: '/svc/metrics',
    access: { kind: 'process-key', app: 'agent' },
    summary:
      "Prometheus text of svcd's metrics; only for svc-agent (its X-Svc-Process-Key, direct loopback); scrape the agent's exporter instead",
    responses: [{ status: 200, description: 'Prometheus text exposition', media: 'text/plain' }],
    async handle({ services }) {
      if (services.metrics === undefined)
        throw new SvcError('not_found', 'metrics are off: set SVC_METRICS_PORT to turn on the exporter');
      const { contentType, text } = await services.metrics.render();
      return { status: 200, headers: {}, contentType, body: new TextEncoder().encode(text) };
    },
  }),
];
