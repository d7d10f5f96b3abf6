// A helper action reaches only the instance of its own SVC_HOME: with another "instance" (a decoy
// listener) on the default administration UI port 6064 and issuer port 6062, svc-auth.sh against a
// home whose admin UI is off (and against a home where nothing runs) fails with the reachability
// error and never sends a request to the default ports. (This test binds the default ports on
// purpose, as the decoy; when something else already holds one, that something is the decoy.)
import { createServer, type Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScript, startAuthStack, type AuthStack } from './stack.ts';

const EXIT_UNREACHABLE = 3;
const DEFAULT_PORTS = [6064, 6062];

let stack: AuthStack;
let adminPassword: string;
const decoys: Server[] = [];
let decoyRequests = 0;

function listenDecoy(port: number): Promise<void> {
  return new Promise((resolve) => {
    const server = createServer((req, res) => {
      decoyRequests += 1;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"access_token":"decoy"}');
    });
    server.once('error', () => resolve()); // taken already: whatever holds it is the other instance
    server.listen(port, '127.0.0.1', () => {
      decoys.push(server);
      resolve();
    });
  });
}

beforeAll(async () => {
  for (const port of DEFAULT_PORTS) await listenDecoy(port);
  stack = await startAuthStack({ adminUi: false, env: { SVC_AUTH_ADMIN_UI: 'off' } });
  adminPassword = (await stack.script(['print-initial-password'])).stdout.trimEnd();
});
afterAll(async () => {
  await stack?.close();
  await Promise.all(decoys.map((server) => new Promise((resolve) => server.close(resolve))));
});

describe('svc-auth.sh reaches only its own SVC_HOME', () => {
  it('add-user with the admin UI of its home off never falls back to the default port', async () => {
    const added = await stack.script(['add-user', 'decoy@example.org', 'svc-viewer'], {
      stdin: 'decoy-pw\n',
    });
    expect(added.code).toBe(EXIT_UNREACHABLE);
    expect(added.stderr).toMatch(/administration UI .* is unreachable/);
    expect(added.stderr).not.toContain('decoy-pw');
    expect(decoyRequests).toBe(0);
    // Its own issuer still answers token actions.
    const token = await stack.token(['user-token'], `${adminPassword}\n`);
    expect(token).not.toBe('decoy');
    expect(decoyRequests).toBe(0);
  });

  it('a home where nothing runs is unreachable, not the instance on the default ports', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'svc-auth-empty-'));
    try {
      for (const args of [
        ['add-user', 'x@example.org', 'svc-viewer'],
        ['delete-user', 'x@example.org'],
        ['automation-token'],
      ]) {
        // automation-token reads its secret first; the others need the admin UI of this home.
        const run = await runScript(empty, args, 'pw\n', {});
        expect(run.code, `${args[0]}: ${run.stderr}`).not.toBe(0);
        expect(run.stdout).toBe('');
      }
      expect(decoyRequests).toBe(0);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});
