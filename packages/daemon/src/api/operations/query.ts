// Query parameter parsing shared by operations: every bad value is a 400 that names the parameter.
import { SvcError } from '@svc/protocol';
import * as z from 'zod';

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

// ---------------------------------------------------------------------------------------------
// The same parsers as zod fields of an operation's query schema: the wire type is a string (that is
// what the JSON Schema says), the handler gets the parsed value.

/** Optional duration (integer seconds or ISO 8601), in milliseconds; `max` in ms. */
export function durationParam(name: string, description: string, max?: number) {
  return z
    .string()
    .optional()
    .transform((value) => {
      const ms = value === undefined || value === '' ? undefined : parseDurationMs(name, value);
      if (ms !== undefined && max !== undefined && ms > max)
        throw new SvcError('invalid_query', `${name}: at most ${max / 1000} seconds`);
      return ms;
    })
    .meta({ description: `${description} (integer seconds or ISO 8601 duration such as PT5M)` });
}

/** Optional integer within bounds. */
export function integerParam(name: string, description: string, bounds: { min: number; max: number }) {
  return z
    .string()
    .optional()
    .transform((value) => optionalInteger({ [name]: value ?? '' }, name, bounds))
    .meta({ description: `${description} (integer ${bounds.min}..${bounds.max})` });
}

/** Optional string matching `pattern`; empty = absent. */
export function patternParam(name: string, description: string, pattern: RegExp) {
  return z
    .string()
    .optional()
    .transform((value) => {
      if (value === undefined || value === '') return undefined;
      if (!pattern.test(value)) throw new SvcError('invalid_query', `${name}: must match ${pattern.source}`);
      return value;
    })
    .meta({ description, pattern: pattern.source });
}

/** Optional free string. */
export function stringParam(description: string) {
  return z.string().optional().meta({ description });
}

/** Required string (may be empty). */
export function requiredParam(name: string, description: string) {
  return z.string({ error: `${name}: required` }).meta({ description });
}
