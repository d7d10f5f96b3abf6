// A managed worker process for the task-loop tests: it reads the injected SVC_* variables, prints
// what it saw (a hash of the key, never the key), then runs WORKER_CONCURRENCY fetch loops against
// SVC_DAEMON_URL (the CA comes from NODE_EXTRA_CA_CERTS). Payload verbs:
//   crash      → exit 3 while holding the task
//   late:<ms>  → answer after <ms> and print the status of that late PUT
//   anything   → answer `result:<payload>` with the payload's content type
import { createHash } from 'node:crypto';

const key = process.env['SVC_PROCESS_KEY'];
const name = process.env['SVC_APPLICATION_NAME'];
const base = process.env['SVC_DAEMON_URL'];
if (!key || !name || !base) {
  console.log('missing SVC_PROCESS_KEY, SVC_APPLICATION_NAME or SVC_DAEMON_URL');
  process.exit(1);
}
const keyHash = createHash('sha256').update(key).digest('hex');
console.log(`env name=${name} url=${base} launch=${process.env['SVC_LAUNCH_TIME']} key_sha256=${keyHash}`);

const url = `${base}/svc/app/${encodeURIComponent(name)}/task`;
const headers = { 'x-svc-process-key': key };

async function answer(id: string, body: string, contentType: string): Promise<number> {
  const response = await fetch(url, {
    method: 'PUT',
    headers: { ...headers, 'x-task-id': id, 'content-type': contentType },
    body,
  });
  await response.arrayBuffer();
  return response.status;
}

async function loop(worker: number): Promise<never> {
  for (;;) {
    let response: Response;
    try {
      response = await fetch(`${url}?timeout=30`, { headers });
    } catch (error) {
      console.log(`fetch error ${(error as Error).message}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      continue;
    }
    if (response.status === 204) continue;
    const body = Buffer.from(await response.arrayBuffer()).toString('utf8');
    if (response.status === 412 || response.status === 400) {
      console.log(`stopped ${response.status} ${body}`);
      process.exit(2);
    }
    if (response.status !== 200) {
      console.log(`retry ${response.status}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      continue;
    }
    const id = response.headers.get('x-task-id') ?? '';
    const contentType = response.headers.get('content-type') ?? 'application/octet-stream';
    console.log(`took ${id} worker=${worker}`);
    if (body === 'crash') process.exit(3);
    if (body.startsWith('late:')) {
      const ms = Number(body.slice(5));
      setTimeout(() => {
        answer(id, `result:${body}`, contentType).then(
          (status) => console.log(`late-put ${id} ${status}`),
          (error: unknown) => console.log(`late-put ${id} error ${(error as Error).message}`),
        );
      }, ms);
      continue;
    }
    const status = await answer(id, `result:${body}`, contentType);
    if (status !== 200) console.log(`put ${id} ${status}`);
  }
}

const concurrency = Number(process.env['WORKER_CONCURRENCY'] ?? '1');
for (let i = 0; i < concurrency; i++) void loop(i);
