// GET /svc/metrics: svcd's Prometheus text (App Mesh 3.0's path). Not public (it names every
// application): a bearer with host-resource-view reads it, and so does svc-agent's exporter with the
// process key of the system application `agent` over a direct loopback connection — the same rule
// as the worker task RPC (docs/decisions.md "Metrics").
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
    access: { kind: 'permission', permission: 'host-resource-view', orProcessKeyOf: METRICS_READER_APP },
    summary:
      "Prometheus text of svcd's metrics: host-resource-view, or svc-agent's X-Svc-Process-Key over a direct loopback connection",
    async handle(context) {
      const { request, services } = context;
      if (request.headers[PROCESS_KEY_HEADER] !== undefined)
        authenticateWorker(request, METRICS_READER_APP, (app, key) => services.verifyProcessKey(app, key));
      if (services.metrics === undefined) throw new SvcError('not_found', 'metrics are not collected');
      const { contentType, text } = await services.metrics.render();
      return { status: 200, headers: {}, contentType, body: new TextEncoder().encode(text) };
    },
  },
];
