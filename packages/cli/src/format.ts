// Output formats: tables for people, `-o json|yaml` for scripts.
import { stringify } from 'yaml';
import { CliError, EXIT } from './errors.ts';

export type OutputFormat = 'table' | 'wide' | 'json' | 'yaml';

export function outputFormat(value: string | undefined, fallback: OutputFormat = 'table'): OutputFormat {
  if (value === undefined) return fallback;
  if (value === 'json' || value === 'yaml' || value === 'wide' || value === 'table') return value;
  throw new CliError(`unknown output format "${value}"`, EXIT.usage, 'use -o json, -o yaml or -o wide');
}

export function structured(value: unknown, format: 'json' | 'yaml'): string {
  return format === 'json' ? JSON.stringify(value, null, 2) + '\n' : stringify(value);
}

export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('   ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n') + '\n';
}

export function cell(value: unknown): string {
  if (value === undefined || value === null || value === '') return '-';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

/** "3m ago", "in 12m" for epoch seconds or ISO strings. */
export function relative(when: unknown, now = Date.now()): string {
  const ms =
    typeof when === 'number' ? when * 1000 : typeof when === 'string' ? Date.parse(when) : Number.NaN;
  if (!Number.isFinite(ms)) return '-';
  const delta = Math.round((ms - now) / 1000);
  const abs = Math.abs(delta);
  const text =
    abs < 60
      ? `${abs}s`
      : abs < 3600
        ? `${Math.floor(abs / 60)}m`
        : abs < 86400
          ? `${Math.floor(abs / 3600)}h`
          : `${Math.floor(abs / 86400)}d`;
  return delta >= 0 ? `in ${text}` : `${text} ago`;
}

/** POSIX single-quote quoting, for turning argv into a daemon command line. */
export function shellQuote(args: readonly string[]): string {
  return args
    .map((a) => (/^[A-Za-z0-9_./:=@%+,-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`))
    .join(' ');
}
