// A password grant as svc-cli, sent from a chosen loopback source address (127.0.0.0/8 all routes to
// `lo`, so a test can be several "clients" on one machine), straight to the issuer (http) or through
// the agent (https, the daemon's CA), with extra headers (forged X-Forwarded-For and the like).
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { AUDIENCE_SCOPE } from '../../src/provider/index.ts';

export interface GrantAnswer {
  status: number;
  body: Record<string, unknown>;
  retryAfter: number | undefined;
}

export interface GrantTarget {
  /** The token endpoint: `http://127.0.0.1:<issuer>/auth/token` or `https://127.0.0.1:<agent>/auth/token`. */
  url: string;
  /** The agent's CA (https only). */
  ca?: string;
}

export function passwordGrant(
  target: GrantTarget,
  credentials: { username: string; password: string },
  options: { from?: string; headers?: Record<string, string> } = {},
): Promise<GrantAnswer> {
  const url = new URL(target.url);
  const body = new URLSearchParams({
    grant_type: 'password',
    username: credentials.username,
    password: credentials.password,
    scope: `openid ${AUDIENCE_SCOPE}`,
  }).toString();
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        localAddress: options.from ?? '127.0.0.1',
        agent: false,
        ...(target.ca === undefined ? {} : { ca: target.ca }),
        headers: {
          ...options.headers,
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': String(Buffer.byteLength(body)),
          authorization: `Basic ${Buffer.from('svc-cli:').toString('base64')}`,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          let parsed: Record<string, unknown> = {};
          try {
            parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
          } catch {
            // not JSON (an agent error page): the status says enough
          }
          const retry = res.headers['retry-after'];
          resolve({
            status: res.statusCode ?? 0,
            body: parsed,
            retryAfter: retry === undefined ? undefined : Number(retry),
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
