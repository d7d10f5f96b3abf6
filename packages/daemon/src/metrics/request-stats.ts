// The request figures (svc_requests_total, svc_request_duration_seconds) kept as plain numbers per
// series and turned into Prometheus samples only when scraped. prom-client's Counter and Histogram
// hash and validate their label object on every inc/observe (even through labels()): per request
// that cost more than the rest of the figures' work and allocated on the hot path of every call.
// The exposition is the same as prom-client's own counter and histogram (names, label order, `le`
// buckets, _sum and _count), through its registry's metric interface (name, help, type, get).

/** One sample as prom-client's registry renders it. */
interface Sample {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

/** What prom-client's Registry.registerMetric needs of a metric. */
export interface CollectedMetric {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'histogram';
  readonly aggregator: 'sum';
  get(): Promise<{ name: string; help: string; type: string; values: Sample[]; aggregator: 'sum' }>;
  reset(): void;
}

interface Series {
  readonly route: string;
  readonly method: string;
  readonly status: string;
  readonly transport: string;
  count: number;
}

interface DurationSeries {
  readonly route: string;
  readonly transport: string;
  /** Observations per bucket (not cumulative); the last slot counts those above every bound. */
  readonly buckets: number[];
  sum: number;
  count: number;
}

/** Most distinct series kept (a client's free-form method name could otherwise grow them). */
const MAX_SERIES = 4096;

export class RequestStats {
  readonly #bounds: readonly number[];
  readonly #series = new Map<string, Series>();
  readonly #durations = new Map<string, DurationSeries>();
  /** Requests of series beyond MAX_SERIES, counted under method "other". */
  readonly requests: CollectedMetric;
  readonly duration: CollectedMetric;

  constructor(options: {
    requestsName: string;
    requestsHelp: string;
    durationName: string;
    durationHelp: string;
    buckets: readonly number[];
  }) {
    this.#bounds = [...options.buckets].sort((a, b) => a - b);
    this.requests = collected(options.requestsName, options.requestsHelp, 'counter', {
      samples: () => this.#requestSamples(),
      reset: () => this.#series.clear(),
    });
    this.duration = collected(options.durationName, options.durationHelp, 'histogram', {
      samples: (name) => this.#durationSamples(name),
      reset: () => this.#durations.clear(),
    });
  }

  /** One answered request: its route template (or "unmatched"), method, status, transport, seconds. */
  record(route: string, method: string, status: number, transport: string, seconds: number): void {
    const key = `${route} ${method} ${status} ${transport}`;
    let series = this.#series.get(key);
    if (series === undefined) {
      const bounded = this.#series.size < MAX_SERIES;
      const otherKey = `${route} other ${status} ${transport}`;
      series = bounded ? undefined : this.#series.get(otherKey);
      if (series === undefined) {
        series = { route, method: bounded ? method : 'other', status: String(status), transport, count: 0 };
        this.#series.set(bounded ? key : otherKey, series);
      }
    }
    series.count++;
    const durationKey = `${route} ${transport}`;
    let duration = this.#durations.get(durationKey);
    if (duration === undefined) {
      duration = {
        route,
        transport,
        buckets: new Array<number>(this.#bounds.length + 1).fill(0),
        sum: 0,
        count: 0,
      };
      this.#durations.set(durationKey, duration);
    }
    let slot = 0;
    while (slot < this.#bounds.length && seconds > this.#bounds[slot]!) slot++;
    duration.buckets[slot]!++;
    duration.sum += seconds;
    duration.count++;
  }

  #requestSamples(): Sample[] {
    return [...this.#series.values()].map((s) => ({
      labels: { route: s.route, method: s.method, status: s.status, transport: s.transport },
      value: s.count,
    }));
  }

  #durationSamples(name: string): Sample[] {
    const samples: Sample[] = [];
    for (const d of this.#durations.values()) {
      let cumulative = 0;
      this.#bounds.forEach((bound, i) => {
        cumulative += d.buckets[i]!;
        samples.push({
          labels: { le: bound, route: d.route, transport: d.transport },
          value: cumulative,
          metricName: `${name}_bucket`,
        });
      });
      samples.push({
        labels: { le: '+Inf', route: d.route, transport: d.transport },
        value: d.count,
        metricName: `${name}_bucket`,
      });
      samples.push({
        labels: { route: d.route, transport: d.transport },
        value: d.sum,
        metricName: `${name}_sum`,
      });
      samples.push({
        labels: { route: d.route, transport: d.transport },
        value: d.count,
        metricName: `${name}_count`,
      });
    }
    return samples;
  }
}

/** A metric object for prom-client's registry; `get` reads `name` when called (OpenMetrics renames counters). */
function collected(
  name: string,
  help: string,
  type: 'counter' | 'histogram',
  source: { samples: (name: string) => Sample[]; reset: () => void },
): CollectedMetric {
  const metric = {
    name,
    help,
    type,
    aggregator: 'sum' as const,
    get: async () => ({
      name: metric.name,
      help: metric.help,
      type: metric.type,
      aggregator: 'sum' as const,
      values: source.samples(metric.name),
    }),
    reset: source.reset,
  };
  return metric;
}
