// A managed worker process for worker.test.ts: runs the library's runWorker against SVC_DAEMON_URL
// (the CA comes from NODE_EXTRA_CA_CERTS), answers `result:<payload>`, and prints how it stopped.
import { runWorker } from '../src/index.ts';

const controller = new AbortController();
process.on('SIGTERM', () => controller.abort());
try {
  const outcome = await runWorker(
    (task) => ({ body: `result:${task.text()}`, contentType: task.contentType }),
    {
      signal: controller.signal,
    },
  );
  console.log(`worker stopped: ${String(outcome)}`);
} catch (error) {
  console.log(`worker failed: ${(error as Error).name}`);
  process.exitCode = 2;
}
