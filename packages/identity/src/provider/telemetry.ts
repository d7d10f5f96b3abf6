// Counters of svc-identity, served as JSON on `/healthz` of the telemetry port (6063). No token,
// secret, user name or client secret ever appears here: counters and key ids only.
import { createServer } from 'node:http';
import type { Server } from 'node:http';

export class Telemetry {
  readonly #now: () => number;
  readonly #startedAt: number;
  readonly #counters = new Map<string, number>();
  readonly #gauges = new Map<string, string | number | boolean>();

  constructor(now: () => number = Date.now) {
    this.#now = now;
    this.#startedAt = now();
  }

  count(name: string, by = 1): void {
    this.#counters.set(name, (this.#counters.get(name) ?? 0) + by);
  }

  counter(name: string): number {
    return this.#counters.get(name) ?? 0;
  }

  setGauge(name: string, value: string | number | boolean): void {
    this.#gauges.set(name, value);
  }

  snapshot(): Record<string, unknown> {
    return {
      status: 'ok',
      uptime_seconds: Math.floor((this.#now() - this.#startedAt) / 1000),
      ...Object.fromEntries(this.#gauges),
      counters: Object.fromEntries([...this.#counters].sort(([a], [b]) => a.localeCompare(b))),
    };
  }
}

/** `GET /healthz` → 200 with the snapshot; anything else 404. */
export function createTelemetryServer(
  telemetry: Telemetry,
  extra: () => Record<string, unknown> = () => ({}),
): Server {
  return createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://telemetry.invalid').pathname;
    if (req.method === 'GET' && path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify({ ...telemetry.snapshot(), ...extra() }));
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"error":"not_found"}');
  });
}
