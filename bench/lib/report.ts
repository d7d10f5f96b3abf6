// Figures, the comparison table (every svc figure with its ratio to the peers and the floor) and
// results.json.
import type { ManagerKind } from '../managers/types.ts';
import { startFloor } from '../managers/floor.ts';
import { startPm2 } from '../managers/pm2.ts';
import { startSupervisord } from '../managers/supervisord.ts';
import { startSvc } from '../managers/svc.ts';
import type { Manager } from '../managers/types.ts';
import { fmtMs, type Summary } from './util.ts';

export type Unit = 'ms' | 's' | 'MiB' | 'KiB' | 'req/s' | 'µs' | 'events/s' | 'tasks/s' | 'verdict';

export interface Row {
  /** floor, svc, pm2, supervisord, or a labelled variant ("svc REST"). */
  subject: string;
  /** Rows are compared within a group (default: the whole figure). */
  group?: string;
  /** The headline number (p50 for latencies); NaN for a verdict. */
  value: number;
  /** A verdict instead of a number (unit `verdict`: "correct", "wrong", "unknown"). */
  text?: string;
  p99?: number;
  n?: number;
  note?: string;
}

export interface Figure {
  id: string;
  title: string;
  unit: Unit;
  better: 'lower' | 'higher';
  /** Target from TARGETS.md, as text. */
  target?: string;
  rows: Row[];
}

export interface BenchContext {
  quick: boolean;
  managers: readonly ManagerKind[];
  /** Start svcd with --cpu-prof into this directory. */
  profileDir: string | undefined;
  /** svcd environment additions (profiling). */
  svcEnv(): Record<string, string> | undefined;
}

export interface Benchmark {
  name: string;
  description: string;
  run(ctx: BenchContext): Promise<Figure[]>;
}

export async function startManager(kind: ManagerKind, ctx: BenchContext): Promise<Manager> {
  switch (kind) {
    case 'floor':
      return startFloor();
    case 'svc': {
      const env = ctx.svcEnv();
      return startSvc(env === undefined ? {} : { env });
    }
    case 'pm2':
      return startPm2();
    case 'supervisord':
      return startSupervisord();
  }
}

export function latencyRow(subject: string, summary: Summary, extra: Partial<Row> = {}): Row {
  return { subject, value: summary.p50, p99: summary.p99, n: summary.n, ...extra };
}

export function formatValue(value: number | undefined, unit: Unit): string {
  if (value === undefined || !Number.isFinite(value)) return '—';
  switch (unit) {
    case 'ms':
      return fmtMs(value);
    case 's':
      return `${value.toFixed(2)} s`;
    case 'MiB':
      return `${value.toFixed(1)} MiB`;
    case 'KiB':
      return `${value.toFixed(1)} KiB`;
    case 'req/s':
    case 'events/s':
    case 'tasks/s':
      return `${Math.round(value).toLocaleString('en-US')} ${unit}`;
    case 'µs':
      return `${value < 10 ? value.toFixed(2) : value.toFixed(1)} µs`;
    case 'verdict':
      return '—';
  }
}

/** svc ÷ other for each non-svc row of the same group, e.g. "0.42× pm2". */
export function ratios(figure: Figure, row: Row): string {
  if (!row.subject.startsWith('svc')) return '';
  const peers = figure.rows.filter((r) => !r.subject.startsWith('svc') && (r.group ?? '') === (row.group ?? ''));
  return peers
    .filter((peer) => Number.isFinite(peer.value) && peer.value !== 0 && Number.isFinite(row.value))
    .map((peer) => {
      const r = row.value / peer.value;
      return `${r < 0.1 ? r.toPrecision(2) : r.toFixed(2)}× ${peer.subject}`;
    })
    .join(', ');
}

export function renderTable(figures: readonly Figure[]): string {
  const lines: string[] = [];
  lines.push('| Figure | Subject | p50 / value | p99 | n | svc ÷ peer | Target |');
  lines.push('|---|---|---|---|---|---|---|');
  for (const figure of figures) {
    figure.rows.forEach((row, i) => {
      lines.push(
        `| ${i === 0 ? `${figure.id}. ${figure.title}` : ''} | ${row.subject}${row.note === undefined ? '' : ` (${row.note})`} | ${row.text ?? formatValue(row.value, figure.unit)} | ${
          row.p99 === undefined ? '' : formatValue(row.p99, figure.unit)
        } | ${row.n ?? ''} | ${ratios(figure, row)} | ${i === 0 ? (figure.target ?? '') : ''} |`,
      );
    });
  }
  return lines.join('\n');
}
