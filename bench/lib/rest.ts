// A keep-alive HTTPS JSON client (the testkit's restClient opens a connection per call).
import https from 'node:https';

export interface RestResult {
  status: number;
  body: Buffer;
  json<T = unknown>(): T;
}

export interface KeepAliveRest {
  call(method: string, path: string, body?: unknown): Promise<RestResult>;
  close(): void;
}

export function keepAliveRest(baseUrl: string, ca: string, token: string, maxSockets = 1): KeepAliveRest {
  const url = new URL(baseUrl);
  const agent = new https.Agent({ keepAlive: true, maxSockets, ca });
  const auth = `Bearer ${token}`;
  return {
    call(method, path, body) {
      const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const headers: Record<string, string> = { authorization: auth };
      if (payload !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = String(payload.length);
      }
      return new Promise((resolve, reject) => {
        const req = https.request({ host: url.hostname, port: url.port, method, path, headers, agent, ca }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const data = Buffer.concat(chunks);
            resolve({ status: res.statusCode ?? 0, body: data, json: <T>() => JSON.parse(data.toString('utf8')) as T });
          });
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(payload);
      });
    },
    close() {
      agent.destroy();
    },
  };
}

/** Throws unless the status is 2xx, with the body in the message. */
export function ok(result: RestResult, what: string): RestResult {
  if (result.status < 200 || result.status > 299) {
    throw new Error(`${what}: HTTP ${result.status} ${result.body.toString('utf8').slice(0, 300)}`);
  }
  return result;
}
