// A tiny HTTPS client for the REST API (CONTRACT §5). It adds the bearer and `X-Target-Host`,
// verifies TLS against the system roots plus NODE_EXTRA_CA_CERTS and `--ca`, and turns the daemon's
// `{error, message}` bodies into ApiError. Commands call `api.call(...)`; when @svc/client covers an
// operation the command can switch to it without changing the error handling.
import { readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { rootCertificates } from 'node:tls';
import { ApiError, transportError } from './errors.ts';

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  text(): string;
  json<T = unknown>(): T;
  header(name: string): string | undefined;
}

export interface CallOptions {
  query?: Record<string, string | number | undefined>;
  /** JSON body (sent as application/json). */
  json?: unknown;
  /** Raw body with its content type. */
  raw?: { body: Buffer | string; contentType: string };
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Statuses returned as a Reply instead of thrown (e.g. 404 while polling). */
  accept?: readonly number[];
  /** Send no bearer (public endpoints such as /svc/auth/config). */
  anonymous?: boolean;
}

export interface ApiOptions {
  server: string;
  /** Extra trusted CA certificates (PEM). */
  ca?: string | undefined;
  /** `X-Target-Host` forward target. */
  target?: string | undefined;
  /** Returns the bearer to send (may refresh); undefined sends none. */
  token?: () => Promise<string | undefined>;
}

/** The CA list for TLS: Node's roots, NODE_EXTRA_CA_CERTS and the given PEM (passing `ca` replaces the defaults). */
export function trustedCas(extra: string | undefined): string[] {
  const cas = [...rootCertificates];
  const file = process.env['NODE_EXTRA_CA_CERTS'];
  if (file !== undefined && file !== '') {
    try {
      cas.push(readFileSync(file, 'utf8'));
    } catch {
      // Node itself warns about an unreadable NODE_EXTRA_CA_CERTS at start.
    }
  }
  if (extra !== undefined) cas.push(extra);
  return cas;
}

export class Api {
  readonly server: string;
  readonly #options: ApiOptions;
  readonly #cas: string[];

  constructor(options: ApiOptions) {
    this.server = options.server.replace(/\/+$/, '');
    this.#options = options;
    this.#cas = trustedCas(options.ca);
  }

  get cas(): string[] {
    return this.#cas;
  }

  async call(method: string, path: string, options: CallOptions = {}): Promise<Reply> {
    const url = new URL(this.server + path);
    for (const [key, value] of Object.entries(options.query ?? {}))
      if (value !== undefined) url.searchParams.set(key, String(value));
    const headers: Record<string, string> = {
      accept: 'application/json, text/plain;q=0.9',
      ...options.headers,
    };
    if (this.#options.target !== undefined) headers['x-target-host'] = this.#options.target;
    if (!options.anonymous && this.#options.token !== undefined) {
      const token = await this.#options.token();
      if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
    }
    let body: Buffer | undefined;
    if (options.json !== undefined) {
      body = Buffer.from(JSON.stringify(options.json));
      headers['content-type'] = 'application/json';
    } else if (options.raw !== undefined) {
      body = Buffer.from(options.raw.body);
      headers['content-type'] = options.raw.contentType;
    }
    if (body !== undefined) headers['content-length'] = String(body.length);
    const reply = await this.#send(method, url, headers, body, options.signal);
    if (reply.status >= 400 && !(options.accept ?? []).includes(reply.status)) throw apiError(reply);
    return reply;
  }

  #send(
    method: string,
    url: URL,
    headers: Record<string, string>,
    body: Buffer | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const requestFn = url.protocol === 'http:' ? httpRequest : httpsRequest;
      const req = requestFn(
        url,
        {
          method,
          headers,
          ...(url.protocol === 'https:' ? { ca: this.#cas } : {}),
          ...(signal === undefined ? {} : { signal }),
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', (error) => reject(transportError(error, this.server)));
          res.on('end', () => {
            const data = Buffer.concat(chunks);
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: data,
              text: () => data.toString('utf8'),
              json: <T>() => JSON.parse(data.toString('utf8')) as T,
              header: (name) => {
                const value = res.headers[name.toLowerCase()];
                return Array.isArray(value) ? value[0] : value;
              },
            });
          });
        },
      );
      req.on('error', (error) => {
        if (signal?.aborted === true) reject(signal.reason as Error);
        else reject(transportError(error, this.server));
      });
      req.end(body);
    });
  }
}

/** `{error, message}` of an error reply, or a generic description. */
export function apiError(reply: Reply): ApiError {
  let code = `http_${reply.status}`;
  let message = `${reply.status} ${reply.text().trim().slice(0, 300) || 'error'}`;
  try {
    const parsed = reply.json<{ error?: unknown; message?: unknown; error_description?: unknown }>();
    if (typeof parsed.error === 'string') code = parsed.error;
    if (typeof parsed.message === 'string') message = parsed.message;
    else if (typeof parsed.error_description === 'string') message = parsed.error_description;
  } catch {
    // not JSON: keep the text
  }
  return new ApiError(reply.status, code, message);
}
