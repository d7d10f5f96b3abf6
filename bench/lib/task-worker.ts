// The managed worker of the tasks benchmark: WORKER_CONCURRENCY loops of GET /svc/app/{name}/task
// (long poll, X-Svc-Process-Key) → PUT the payload back as the result, over HTTPS to
// SVC_DAEMON_URL with fetch (keep-alive), trusting the daemon's CA through NODE_EXTRA_CA_CERTS.
const key = process.env['SVC_PROCESS_KEY'];
const name = process.env['SVC_APPLICATION_NAME'];
const base = process.env['SVC_DAEMON_URL'];
if (!key || !name || !base) {
  console.log('missing SVC_PROCESS_KEY, SVC_APPLICATION_NAME or SVC_DAEMON_URL');
  process.exit(1);
}
const url = `${base}/svc/app/${encodeURIComponent(name)}/task`;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function loop(): Promise<void> {
  for (;;) {
    let response: Response;
    try {
      response = await fetch(`${url}?timeout=30`, { headers: { 'x-svc-process-key': key! } });
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
        'x-svc-process-key': key!,
        'x-task-id': response.headers.get('x-task-id') ?? '',
        'content-type': response.headers.get('content-type') ?? 'application/octet-stream',
      },
      body,
    });
    await put.arrayBuffer();
  }
}

const concurrency = Math.max(1, Math.min(64, Number(process.env['WORKER_CONCURRENCY'] ?? '1')));
for (let i = 0; i < concurrency; i++) void loop();
