// GET /svc/metrics: svcd's Prometheus text, read by svc-agent's exporter. Not public (it names every
// application); its one credential is the process key of the system application `agent` over a
// direct loopback connection — the same rule as the worker task RPC — so no bearer role can read it
// and no network path can (docs/decisions.md "Metrics").
import { SvcError } from '@svc/protocol';
import { authenticateWorker, PROCESS_KEY_HEADER } from '../../tasks/worker-auth.ts';
import type { Services } from '../services.ts';
import type { Operation } from '../types.ts';

/** The system application whose process key reads the metrics (apps/agent.yaml). */
export const METRICS_READER_APP = 'agent';

export const metricsOperations: readonly Operation<Services>[] = [
  {
    id: 'getMetrics',
    method: 'GET',
    path: '/svc/metrics',
    access: { kind: 'process-key' },
    summary:
      "Prometheus text of svcd's metrics; only for svc-agent (its X-Svc-Process-Key, direct loopback); scrape the agent's exporter instead",
    async handle(context) {
      const { request, services } = context;
      if (request.headers[PROCESS_KEY_HEADER] === undefined)
        throw new SvcError(
          'forbidden',
          "GET /svc/metrics is served to svc-agent only; scrape the agent's Prometheus exporter (SVC_METRICS_PORT)",
        );
      authenticateWorker(request, METRICS_READER_APP, (app, key) => services.verifyProcessKey(app, key));
      if (services.metrics === undefined)
        throw new SvcError('not_found', 'metrics are off: set SVC_METRICS_PORT to turn on the exporter');
      const { contentType, text } = await services.metrics.render();
      return { status: 200, headers: {}, contentType, body: new TextEncoder().encode(text) };
    },
  },
];
