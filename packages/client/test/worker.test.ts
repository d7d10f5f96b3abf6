// runWorker in a real managed process of a real daemon, with tasks sent through the library.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';
import { connect, type SvcClient } from '../src/index.ts';

let daemon: TestDaemon;
let client: SvcClient;
beforeAll(async () => {
  daemon = await startTestDaemon();
  client = await connect({ url: daemon.restUrl, ca: daemon.ca, token: await daemon.token('admin') });
});
afterAll(async () => {
  await client?.close();
  await daemon?.close();
});

describe('runWorker in a managed process', () => {
  it('takes tasks sent with runTask and returns their results with the content type', async () => {
    const script = join(import.meta.dirname, 'worker-process.ts');
    await client.registerApplication('worker', {
      command: `'${process.execPath}' '${script}'`,
      shell: true,
      env: { NODE_EXTRA_CA_CERTS: join(daemon.workDir, 'ssl', 'ca.pem') },
    });
    const text = await client.runTask('worker', 'hello', { timeoutSeconds: 30 });
    expect(text.text()).toBe('result:hello');
    expect(text.contentType).toMatch(/^text\/plain/);
    expect(text.taskId).toMatch(/./);
    const json = await client.runTask('worker', { n: 1 }, { timeoutSeconds: 30 });
    expect(json.text()).toBe('result:{"n":1}');
    expect(json.contentType).toMatch(/^application\/json/);
    await client.deleteApplication('worker');
  });
});
