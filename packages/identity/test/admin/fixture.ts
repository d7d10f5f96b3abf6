// A gRPC admin server over the in-memory identity store in a temp work directory (admin tests).
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashPassword, loadMasterKey, type SecretBox } from '../../src/credentials/index.ts';
import { createAdminClient, type AdminClient } from '../../src/admin/grpc-client.ts';
import { startAdminGrpcServer, type AdminGrpcServer } from '../../src/admin/grpc-server.ts';
import { AdminService } from '../../src/admin/service.ts';
import { InMemorySessionRegistry } from '../../src/admin/sessions.ts';
import { loadOrCreateAdminTls, type AdminTlsMaterial } from '../../src/admin/tls.ts';
import { MemoryIdentityStore } from './memory-store.ts';

export interface AdminFixture {
  readonly workDir: string;
  readonly home: string;
  readonly tls: AdminTlsMaterial;
  readonly store: MemoryIdentityStore;
  readonly sessions: InMemorySessionRegistry;
  readonly server: AdminGrpcServer;
  /** Secrets handed to onAutomationSecretChanged (never logged). */
  readonly automationSecrets: string[];
  readonly audit: { event: string; fields: Record<string, string> }[];
  /** The work directory's secret-master-key (TOTP secrets are stored encrypted with it). */
  readonly secrets: SecretBox;
  /** Users whose sign-in lockout the service was asked to clear. */
  readonly unlocked: string[];
  /** A client with the right client certificate (closed by close()). */
  client(): AdminClient;
  close(): Promise<void>;
}

export async function startAdminFixture(): Promise<AdminFixture> {
  const home = await mkdtemp(join(tmpdir(), 'svc-admin-test-'));
  const workDir = join(home, 'work');
  await mkdir(join(workDir, 'auth', 'secrets'), { recursive: true, mode: 0o700 });
  const tls = await loadOrCreateAdminTls(workDir);
  const store = new MemoryIdentityStore(await hashPassword('static-password'));
  const sessions = new InMemorySessionRegistry();
  const automationSecrets: string[] = [];
  const audit: AdminFixture['audit'] = [];
  const secrets = await loadMasterKey(workDir);
  const unlocked: string[] = [];
  const service = new AdminService({
    store,
    sessions,
    workDir,
    secrets,
    signInLocks: {
      clear: (user) => {
        unlocked.push(user.user_id);
        return 1;
      },
    },
    onAutomationSecretChanged: (secret) => void automationSecrets.push(secret),
    audit: (event, fields) => void audit.push({ event, fields }),
  });
  const server = await startAdminGrpcServer({ service, tls, listen: '127.0.0.1:0' });
  const clients: AdminClient[] = [];
  return {
    workDir,
    home,
    tls,
    store,
    sessions,
    server,
    automationSecrets,
    audit,
    secrets,
    unlocked,
    client() {
      const client = createAdminClient(server.target, {
        caCert: tls.caCert,
        clientCert: tls.clientCert,
        clientKey: tls.clientKey,
      });
      clients.push(client);
      return client;
    },
    async close() {
      for (const client of clients) client.close();
      await server.close();
      await rm(home, { recursive: true, force: true });
    },
  };
}
