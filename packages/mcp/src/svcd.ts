// Requests to svcd's REST API on behalf of an MCP client, with that client's own bearer: every tool
// call goes through svcd's one dispatcher and its access rules, exactly as a REST call would.
import { request } from 'node:https';

export interface SvcdAnswer {
  status: number;
  headers: Readonly<Record<string, string | string[] | undefined>>;
  body: Buffer;
}

export interface SvcdCall {
  method: string;
  /** Path with its query string, e.g. `/svc/app/x/output?stdout_position=0`. */
  path: string;
  /** The caller's bearer; omitted only for public documents. */
  token?: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  contentType?: string;
  /** Abort after this long (the operation's own timeout plus a margin). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export type SvcdCaller = (call: SvcdCall) => Promise<SvcdAnswer>;

/** Answers larger than this are cut (the tools cut far earlier; this bounds the agent's memory). */
const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

export function svcdCaller(options: { baseUrl: string; ca: string | undefined }): SvcdCaller {
  const base = new URL(options.baseUrl);
  return (call) =>
    new Promise((resolve, reject) => {
      const body = call.body === undefined ? undefined : Buffer.from(call.body);
      const req = request(
        {
          host: base.hostname,
          port: base.port,
          path: call.path,
          method: call.method,
          ...(options.ca === undefined ? {} : { ca: options.ca }),
          headers: {
            ...call.headers,
            ...(call.token === undefined ? {} : { authorization: `Bearer ${call.token}` }),
            accept: 'application/json',
            ...(body === undefined
              ? {}
              : {
                  'content-type': call.contentType ?? 'application/json',
                  'content-length': String(body.length),
                }),
          },
          timeout: call.timeoutMs ?? 30_000,
          ...(call.signal === undefined ? {} : { signal: call.signal }),
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size <= MAX_ANSWER_BYTES) chunks.push(chunk);
          });
          res.on('error', reject);
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
          );
        },
      );
      req.on('timeout', () => req.destroy(new Error('svcd did not answer in time')));
      req.on('error', reject);
      req.end(body);
    });
}

/** One header's value as a string. */
export function header(answer: SvcdAnswer, name: string): string | undefined {
  const value = answer.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
