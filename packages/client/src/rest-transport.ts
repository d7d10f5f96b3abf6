// HTTPS REST transport for Node: node:https with a custom CA (the daemon's generated CA). A plain
// `http://` base URL (a loopback gateway or test server) is sent with node:http.
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import { abortErrorOf } from './abort.ts';
import { TransportDisconnectedError } from './errors.ts';
import { queryString, type Transport, type WireCall, type WireResult } from './transport.ts';

export interface RestTransportOptions {
  /** `https://host:port` of the daemon (6058) or the agent (6060). */
  baseUrl: string;
  /** PEM of the CA to trust; default the system store (and NODE_EXTRA_CA_CERTS). */
  ca?: string | Buffer;
  /** Receive bound in bytes (default 1 GiB). */
  maxBodyBytes?: number;
}

export class RestTransport implements Transport {
  readonly kind = 'rest' as const;
  readonly #base: URL;
  readonly #agent: Agent | HttpAgent;
  readonly #maxBodyBytes: number;

  constructor(options: RestTransportOptions) {
    this.#base = new URL(options.baseUrl);
    this.#agent =
      this.#base.protocol === 'http:'
        ? new HttpAgent({ keepAlive: true })
        : new Agent({ keepAlive: true, ...(options.ca === undefined ? {} : { ca: options.ca }) });
    this.#maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024 * 1024;
  }

  call(call: WireCall): Promise<WireResult> {
    const body = call.body ?? new Uint8Array(0);
    return new Promise<WireResult>((resolve, reject) => {
      const send = this.#base.protocol === 'http:' ? httpRequest : httpsRequest;
      const req = send(
        {
          host: this.#base.hostname,
          port: this.#base.port,
          method: call.method,
          path: this.#base.pathname.replace(/\/$/, '') + call.path + queryString(call.query),
          headers: { ...call.headers, 'content-length': String(body.byteLength) },
          agent: this.#agent,
          ...(call.signal === undefined ? {} : { signal: call.signal }),
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.byteLength;
            if (size > this.#maxBodyBytes) {
              res.destroy(new Error(`response body above ${this.#maxBodyBytes} bytes`));
              return;
            }
            chunks.push(chunk);
          });
          res.on('end', () => {
            const headers: Record<string, string> = {};
            for (const [k, v] of Object.entries(res.headers))
              if (typeof v === 'string') headers[k] = v;
              else if (Array.isArray(v)) headers[k] = v.join(', ');
            resolve({
              status: res.statusCode ?? 0,
              headers,
              contentType: headers['content-type'] ?? '',
              body: Buffer.concat(chunks),
            });
          });
          res.on('error', reject);
        },
      );
      req.on('error', (error) =>
        reject(
          call.signal?.aborted === true
            ? abortErrorOf(call.signal)
            : new TransportDisconnectedError(`HTTPS request failed: ${error.message}`, { cause: error }),
        ),
      );
      req.end(body);
    });
  }

  async close(): Promise<void> {
    this.#agent.destroy();
  }
}
