// The CLI's connection to the daemon: every request goes through @svc/client (SvcClient over its
// RestTransport), which adds the bearer and `X-Target-Host` and turns error answers into its
// ApiError; this module maps that one ApiError, and transport failures, to CliError exit codes and
// hints. TLS trusts the system roots plus NODE_EXTRA_CA_CERTS and `--ca`.
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import {
  ApiError as ClientApiError,
  RestTransport,
  SvcClient,
  TransportDisconnectedError,
  type WireCall,
} from '@svc/client';
import { ApiError, transportError } from './errors.ts';

export interface Reply {
  status: number;
  headers: Record<string, string>;
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

/** The CLI's error for a failure of @svc/client: its ApiError keeps status, code and message. */
export function cliErrorOf(error: unknown, server: string): unknown {
  if (error instanceof ClientApiError) return new ApiError(error.status, error.code, error.message);
  if (error instanceof TransportDisconnectedError) return transportError(error.cause ?? error, server);
  return error;
}

export class Api {
  readonly server: string;
  readonly #options: ApiOptions;
  readonly #cas: string[];
  /** Sends the bearer; `anonymous` calls go through a second client that never holds one. */
  readonly #client: SvcClient;
  readonly #anonymous: SvcClient;

  constructor(options: ApiOptions) {
    this.server = options.server.replace(/\/+$/, '');
    this.#options = options;
    this.#cas = trustedCas(options.ca);
    const transport = new RestTransport({ baseUrl: this.server, ca: this.#cas.join('\n') });
    const target = options.target === undefined ? {} : { targetHost: options.target };
    this.#client = new SvcClient({ transport, ...target });
    this.#anonymous = new SvcClient({ transport, ...target });
  }

  get cas(): string[] {
    return this.#cas;
  }

  async call(method: string, path: string, options: CallOptions = {}): Promise<Reply> {
    let client = this.#anonymous;
    if (!options.anonymous && this.#options.token !== undefined) {
      const token = await this.#options.token();
      if (token !== undefined) {
        this.#client.setToken(token);
        client = this.#client;
      }
    }
    const query: Record<string, string> = {};
    for (const [key, value] of Object.entries(options.query ?? {}))
      if (value !== undefined) query[key] = String(value);
    const headers: Record<string, string> = { accept: 'application/json, text/plain;q=0.9' };
    for (const [key, value] of Object.entries(options.headers ?? {})) headers[key.toLowerCase()] = value;
    const call: WireCall = { method, path, query, headers };
    if (options.json !== undefined) {
      call.body = Buffer.from(JSON.stringify(options.json));
      headers['content-type'] = 'application/json';
    } else if (options.raw !== undefined) {
      call.body = Buffer.from(options.raw.body);
      headers['content-type'] = options.raw.contentType;
    }
    try {
      const result = await client.request(
        call,
        options.signal === undefined ? undefined : { signal: options.signal },
        options.accept ?? [],
      );
      const body = Buffer.from(result.body.buffer, result.body.byteOffset, result.body.byteLength);
      return {
        status: result.status,
        headers: result.headers,
        body,
        text: () => body.toString('utf8'),
        json: <T>() => JSON.parse(body.toString('utf8')) as T,
        header: (name) => result.headers[name.toLowerCase()],
      };
    } catch (error) {
      throw cliErrorOf(error, this.server);
    }
  }

  async close(): Promise<void> {
    await this.#client.close();
  }
}
