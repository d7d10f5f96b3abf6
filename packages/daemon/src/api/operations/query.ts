// Query parameter parsing shared by operations: every bad value is a 400 that names the parameter.
import { SvcError } from '@svc/protocol';

/** Longest duration a query accepts: about 68 years (App Mesh 3.0's run defaults are P2D / P2DT12H). */
export const MAX_QUERY_DURATION_SECONDS = 2 ** 31 - 1;

/**
 * Integer seconds or an ISO 8601 duration (PT5M, P2DT12H, P1W, PT0.5S), returned in milliseconds.
 * Years and months have no fixed length and are refused.
 */
export function parseDurationMs(name: string, value: string): number {
  let ms: number;
  if (/^\d{1,10}$/.test(value)) ms = Number(value) * 1000;
  else {
    const match =
      /^P(?:(\d{1,6})W)?(?:(\d{1,6})D)?(?:T(?:(\d{1,6})H)?(?:(\d{1,6})M)?(?:(\d{1,9}(?:\.\d{1,3})?)S)?)?$/.exec(
        value,
      );
    if (match === null || value === 'P' || value.endsWith('T'))
      throw new SvcError(
        'invalid_query',
        `${name}: expected integer seconds or an ISO 8601 duration such as PT5M or P2DT12H (weeks, days, hours, minutes, seconds)`,
      );
    const [, w, d, h, m, s] = match;
    ms =
      (((Number(w ?? 0) * 7 + Number(d ?? 0)) * 24 + Number(h ?? 0)) * 60 + Number(m ?? 0)) * 60_000 +
      Math.round(Number(s ?? 0) * 1000);
  }
  if (ms > MAX_QUERY_DURATION_SECONDS * 1000)
    throw new SvcError('invalid_query', `${name}: at most ${MAX_QUERY_DURATION_SECONDS} seconds`);
  return ms;
}

export function optionalDurationMs(
  query: Readonly<Record<string, string>>,
  name: string,
): number | undefined {
  const value = query[name];
  return value === undefined || value === '' ? undefined : parseDurationMs(name, value);
}

export function optionalInteger(
  query: Readonly<Record<string, string>>,
  name: string,
  bounds: { min: number; max: number },
): number | undefined {
  const value = query[name];
  if (value === undefined || value === '') return undefined;
  if (!/^-?\d{1,16}$/.test(value))
    throw new SvcError('invalid_query', `${name}: expected an integer, got "${value.slice(0, 40)}"`);
  const n = Number(value);
  if (n < bounds.min || n > bounds.max)
    throw new SvcError('invalid_query', `${name}: must be between ${bounds.min} and ${bounds.max}`);
  return n;
}
