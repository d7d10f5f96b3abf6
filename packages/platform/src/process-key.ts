// Where a process key may come from (spec: Worker task loop): only from this host. svcd checks it
// before accepting a key (daemon auth/process-key.ts), svc-agent before relaying one (agent
// routes.ts); both decide "this host" here.
import { isIPv4 } from 'node:net';

/**
 * Whether a socket's remote address is loopback: 127.0.0.0/8, ::1, or an IPv4-mapped 127.x
 * (::ffff:127.0.0.1, also written in hex ::ffff:7f00:1).
 */
export function isLoopbackAddress(address: string): boolean {
  const a = address.trim().toLowerCase();
  if (a === '::1' || a === '0:0:0:0:0:0:0:1') return true;
  const v4 = a.startsWith('::ffff:') ? a.slice('::ffff:'.length) : a;
  if (isIPv4(v4)) return v4.startsWith('127.');
  // IPv4-mapped in hex form: ::ffff:7fXX:XXXX
  return /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(a);
}

/**
 * Whether a proxy forwarded the request (svc-agent sets X-Forwarded-For on every request and WSS
 * upgrade it forwards): its socket may be loopback, but the caller is not on this host's loopback.
 */
export function isForwarded(headers: Readonly<Record<string, string | string[] | undefined>>): boolean {
  return headers['x-forwarded-for'] !== undefined || headers['forwarded'] !== undefined;
}
