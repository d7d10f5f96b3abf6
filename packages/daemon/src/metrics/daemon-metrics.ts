// svcd's Prometheus registry (prom-client), read by svc-agent's exporter through GET /svc/metrics.
// Request figures come from a wrapper around the one dispatch function (daemon.ts), labelled by the
// operation's path template, never the raw path (which carries app names and is unbounded); app
// figures are read from the supervisor at scrape time; events/ and transports/ add small counters.
// Standard process metrics carry the prefix `svcd_` so they never collide with the agent's own.
import { Counter, Gauge, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import type { Router } from '../api/router.ts';
import type { ApiRequest, ApiResponse } from '../api/types.ts';
import type { SupervisorApi, SupervisorEvent } from '../supervisor/types.ts';
import { RequestStats } from './request-stats.ts';

/** `https`: every connection of the REST port; `wss`: those upgraded to WebSocket; `tcp`: the TCP port. */
export type ConnectionKind = 'https' | 'wss' | 'tcp';

export class DaemonMetrics {
  readonly registry = new Registry();
  readonly #requests = new RequestStats({
    requestsName: 'svc_requests_total',
    requestsHelp: 'API requests by operation route (path template), method, status and transport',
    durationName: 'svc_request_duration_seconds',
    durationHelp: 'API request latency by operation route and transport',
    buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
  });
  readonly #restarts = new Counter({
    name: 'svc_app_restarts_total',
    help: 'Starts of an app after an earlier process of it exited (since the daemon started)',
    labelNames: ['app'] as const,
    registers: [this.registry],
  });
  readonly #eventDeliveries = new Counter({
    name: 'svc_event_deliveries_total',
    help: 'Event pushes queued on persistent connections, by event type',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });
  readonly #eventDrops = new Counter({
    name: 'svc_event_drops_total',
    help: 'Event pushes that could not be queued (connection closed or over its bound), by event type',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });
  readonly #connections = new Gauge({
    name: 'svc_connections',
    help: 'Open connections by kind: https (all of the REST port), wss (upgraded ones), tcp',
    labelNames: ['transport'] as const,
    registers: [this.registry],
  });
  readonly #tokenRejections = new Counter({
    name: 'svc_token_rejections_total',
    help: 'Bearer tokens that failed verification, by error code (invalid_token; unavailable: the issuer could not be reached)',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });
  readonly #exited = new Set<string>();

  constructor() {
    this.registry.registerMetric(this.#requests.requests as unknown as Metric);
    this.registry.registerMetric(this.#requests.duration as unknown as Metric);
    collectDefaultMetrics({ register: this.registry, prefix: 'svcd_' });
  }

  /** The app figures, once the supervisor exists (the listeners, counted from the start, come first). */
  attachSupervisor(supervisor: SupervisorApi, state: (name: string) => string | undefined): void {
    const apps = new Gauge({
      name: 'svc_apps',
      help: 'Applications by lifecycle state',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const view of supervisor.list()) this.inc({ state: state(view.name) ?? 'unknown' });
      },
    });
    void apps;
    new Gauge({
      name: 'svc_app_memory_bytes',
      help: 'Resident memory of the process group of each running app',
      labelNames: ['app'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const view of supervisor.list())
          if (typeof view['memory'] === 'number') this.set({ app: view.name }, view['memory']);
      },
    });
    new Gauge({
      name: 'svc_app_cpu_percent',
      help: 'CPU use of the process group of each running app, percent of one core since the previous reading',
      labelNames: ['app'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const view of supervisor.list())
          if (typeof view['cpu'] === 'number') this.set({ app: view.name }, view['cpu']);
      },
    });
    supervisor.onEvent((event) => this.#onSupervisorEvent(event));
  }

  tokenRejected(code: string): void {
    this.#tokenRejections.inc({ code });
  }

  /** The worker task queues' figures, read at scrape time. */
  attachTasks(tasks: { totals(): { queued: number; inFlight: number; fetchers: number } }): void {
    new Gauge({
      name: 'svc_tasks',
      help: 'Worker tasks by state: queued (not yet fetched by a worker) and in_flight (fetched, not answered)',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        const totals = tasks.totals();
        this.set({ state: 'queued' }, totals.queued);
        this.set({ state: 'in_flight' }, totals.inFlight);
      },
    });
    new Gauge({
      name: 'svc_task_fetchers',
      help: 'Worker fetch requests waiting for a task',
      registers: [this.registry],
      collect() {
        this.set(tasks.totals().fetchers);
      },
    });
  }

  #onSupervisorEvent(event: SupervisorEvent): void {
    if (event.type === 'EXIT') this.#exited.add(event.app);
    else if (event.type === 'START' && this.#exited.has(event.app)) this.#restarts.inc({ app: event.app });
    else if (event.type === 'REMOVED') this.#exited.delete(event.app);
  }

  /**
   * Wraps the dispatch function: every request of every transport is counted once, by route
   * (request-stats.ts), and then told to `after` (the debug log line).
   */
  instrument(
    router: Router<unknown>,
    dispatch: (request: ApiRequest) => Promise<ApiResponse>,
    after?: (request: ApiRequest, response: ApiResponse) => void,
  ): (request: ApiRequest) => Promise<ApiResponse> {
    return async (request) => {
      const started = performance.now();
      const response = await dispatch(request);
      let route = 'unmatched';
      try {
        route = router.match(request.method, request.path).operation.path;
      } catch {
        // 404/405/400 from the router: counted as unmatched (the raw path is never a label)
      }
      this.#requests.record(
        route,
        request.method,
        response.status,
        request.transport,
        (performance.now() - started) / 1000,
      );
      after?.(request, response);
      return response;
    };
  }

  eventPushed(type: string, queued: boolean): void {
    (queued ? this.#eventDeliveries : this.#eventDrops).inc({ type });
  }

  connectionOpened(transport: ConnectionKind): void {
    this.#connections.inc({ transport });
  }

  connectionClosed(transport: ConnectionKind): void {
    this.#connections.dec({ transport });
  }

  async render(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }
}
