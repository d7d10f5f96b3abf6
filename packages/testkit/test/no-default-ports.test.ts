// Test daemons never touch a default port (6058–6064, 5557): with decoys holding every default port,
// a test daemon in builtin mode with all its system applications (identity provider, admin UI,
// agent) comes up complete, and no listener it records is a default port nor was any decoy reached.
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_MODE_ENV, startTestDaemon } from '../src/index.ts';

const REPO = resolve(import.meta.dirname, '../../..');
const DEFAULT_PORTS = [6058, 6059, 6060, 6061, 6062, 6063, 6064, 5557];
const decoys: Server[] = [];
let decoyConnections = 0;

beforeAll(async () => {
  for (const port of DEFAULT_PORTS)
    await new Promise<void>((done) => {
      const server = createServer((socket) => {
        decoyConnections += 1;
        socket.destroy();
      });
      server.once('error', () => done()); // held already: whatever holds it plays the decoy
      server.listen(port, '127.0.0.1', () => {
        decoys.push(server);
        done();
      });
    });
});
afterAll(async () => {
  await Promise.all(decoys.map((server) => new Promise((done) => server.close(done))));
});

describe('test daemons and default ports', () => {
  it('a builtin-mode test daemon with every system app binds only ephemeral ports', async () => {
    const app = async (name: string): Promise<string> => readFile(join(REPO, 'apps', `${name}.yaml`), 'utf8');
    await using daemon = await startTestDaemon({
      env: { ...BUILTIN_MODE_ENV },
      agent: true,
      files: { 'apps/identity.yaml': await app('identity'), 'apps/authadmin.yaml': await app('authadmin') },
    });
    await daemon.agent();
    const wanted = ['rest', 'tcp', 'agent', 'issuer', 'telemetry', 'grpc', 'admin_ui'];
    const deadline = Date.now() + 60_000;
    let ports = await daemon.ports();
    while (!wanted.every((key) => ports[key] !== undefined)) {
      if (Date.now() > deadline) throw new Error(`ports.json: ${JSON.stringify(ports)}\n${daemon.stderr()}`);
      // Bounded condition poll: svcd merges each system app's record as it comes up.
      await new Promise((done) => setTimeout(done, 50));
      ports = await daemon.ports();
    }
    for (const [name, port] of Object.entries(ports)) expect(DEFAULT_PORTS, name).not.toContain(port);
    expect(decoyConnections).toBe(0);
  });
});
