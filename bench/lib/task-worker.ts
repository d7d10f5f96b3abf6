// The managed worker of the tasks benchmark: WORKER_CONCURRENCY loops that fetch a task (GET
// /svc/app/{name}/task, long poll, X-Svc-Process-Key) and PUT its payload back as the result.
// WORKER_TRANSPORT picks the worker's side of the wire:
//   tcp   — @svc/client's runWorker over one TLS TCP connection to WORKER_TCP_PORT (the loops share
//           it, as App Mesh's TCP worker shares its client), the daemon's CA from NODE_EXTRA_CA_CERTS;
//   rest  — @svc/client's runWorker over HTTPS to SVC_DAEMON_URL (node:https, keep-alive);
//   fetch — a bare loop of the global fetch (undici) over HTTPS to SVC_DAEMON_URL.
import { readFileSync } from 'node:fs';
import { runWorker, TcpTransport, type Transport } from '@svc/client';
import { PROCESS_KEY_HEADER } from '@svc/protocol';

const key = process.env['SVC_PROCESS_KEY'];
const name = process.env['SVC_APPLICATION_NAME'];
const base = process.env['SVC_DAEMON_URL'];
if (!key || !name || !base) {
  console.log('missing SVC_PROCESS_KEY, SVC_APPLICATION_NAME or SVC_DAEMON_URL');
  process.exit(1);
}
// --cpu-prof writes its profile on a normal exit only.
process.on('SIGTERM', () => process.exit(0));
const concurrency = Math.max(1, Math.min(64, Number(process.env['WORKER_CONCURRENCY'] ?? '1')));
const kind = process.env['WORKER_TRANSPORT'] ?? 'tcp';
const echo = (task: { body: Uint8Array; contentType: string }) => ({
  body: task.body,
  contentType: task.contentType,
});
const fail = (error: unknown): void => {
  console.log(`worker stopped: ${(error as Error).message}`);
  process.exit(2);
};

if (kind === 'tcp') {
  const ca = readFileSync(process.env['NODE_EXTRA_CA_CERTS'] ?? '');
  const tcp = await TcpTransport.connect({
    host: new URL(base).hostname,
    port: Number(process.env['WORKER_TCP_PORT']),
    ca,
  });
  // A connection the daemon closes ends the worker (svcd restarts it: behavior standby).
  void tcp.closed.then(() => process.exit(3));
  const shared: Transport = { kind: 'tcp', call: (call) => tcp.call(call), close: async () => undefined };
  for (let i = 0; i < concurrency; i++) runWorker(echo, { transport: () => shared }).catch(fail);
} else if (kind === 'rest') {
  for (let i = 0; i < concurrency; i++) runWorker(echo).catch(fail);
} else {
  const url = `${base}/svc/app/${encodeURIComponent(name)}/task`;
  const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
  const loop = async (): Promise<void> => {
    for (;;) {
      let response: Response;
      try {
        response = await fetch(`${url}?timeout=30`, { headers: { [PROCESS_KEY_HEADER]: key } });
      } catch (error) {
        console.log(`fetch error ${(error as Error).message}`);
        await sleep(100);
        continue;
      }
      const body = await response.arrayBuffer();
      if (response.status === 204) continue;
      if (response.status === 412 || response.status === 400) process.exit(2);
      if (response.status !== 200) {
        await sleep(100);
        continue;
      }
      const put = await fetch(url, {
        method: 'PUT',
        headers: {
          [PROCESS_KEY_HEADER]: key,
          'x-task-id': response.headers.get('x-task-id') ?? '',
          'content-type': response.headers.get('content-type') ?? 'application/octet-stream',
        },
        body,
      });
      await put.arrayBuffer();
    }
  };
  for (let i = 0; i < concurrency; i++) void loop();
}
