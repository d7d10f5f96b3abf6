// HTTPS REST transport over fetch (browsers; also works in Node when the system store trusts the CA).
import { abortErrorOf } from './abort.ts';
import { TransportDisconnectedError } from './errors.ts';
import { queryString, type Transport, type WireCall, type WireResult } from './transport.ts';

export interface FetchTransportOptions {
  baseUrl: string;
  fetch?: typeof globalThis.fetch;
}

export class FetchTransport implements Transport {
  readonly kind = 'rest' as const;
  readonly #base: string;
  readonly #fetch: typeof globalThis.fetch;

  constructor(options: FetchTransportOptions) {
    this.#base = options.baseUrl.replace(/\/$/, '');
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  async call(call: WireCall): Promise<WireResult> {
    let res: globalThis.Response;
    try {
      res = await this.#fetch(this.#base + call.path + queryString(call.query), {
        method: call.method,
        headers: call.headers ?? {},
        // (The cast: DOM's BodyInit wants an ArrayBuffer-backed view; our bytes always are.)
        ...(call.body === undefined || call.body.byteLength === 0 ? {} : { body: call.body as Uint8Array<ArrayBuffer> }),
        ...(call.signal === undefined ? {} : { signal: call.signal }),
      });
    } catch (error) {
      if (call.signal?.aborted === true) throw abortErrorOf(call.signal);
      throw new TransportDisconnectedError('HTTPS request failed', { cause: error });
    }
    const headers: Record<string, string> = {};
    res.headers.forEach((value, key) => {
      headers[key] = value;
    });
    return {
      status: res.status,
      headers,
      contentType: headers['content-type'] ?? '',
      body: new Uint8Array(await res.arrayBuffer()),
    };
  }

  async close(): Promise<void> {}
}
