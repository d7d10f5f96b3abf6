#!/usr/bin/env node
// svc-identity: the built-in OIDC identity provider (CONTRACT §1), run by svcd as the system
// application `identity` (apps/identity.yaml) in builtin mode only.
//   issuer     http://127.0.0.1:<SVC_ISSUER_PORT, 6062>/auth
//   telemetry  http://127.0.0.1:<SVC_AUTH_TELEMETRY_PORT, 6063>/healthz
//   admin gRPC SVC_AUTH_GRPC_LISTEN (127.0.0.1:5557, mutual TLS)
// Settings: config/oidc.yaml under SVC_HOME, overlaid by the environment. Secrets come only from
// work/auth/secrets/ (validated at each start: a pending password becomes active here). Bound ports
// go to work/ports.identity.json, which svcd merges into work/ports.json.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  startAdminGrpcServer,
  AdminService,
  InMemorySessionRegistry,
  loadOrCreateAdminTls,
} from '../src/admin/index.ts';
import { writeFileAtomic } from '@svc/platform/atomic-file';
import { loadCredentials, loadMasterKey, writeRelayKey } from '../src/credentials/index.ts';
import {
  IdentityState,
  SignInThrottle,
  loadIdentitySettings,
  startIdentityServer,
} from '../src/provider/index.ts';
import { INSTALL_ROOT } from '@svc/platform/config';
import { UserStore } from '../src/store/user-store.ts';

/** Default SVC_HOME: the installation root (the repository root). */
const DEFAULT_HOME = INSTALL_ROOT;

function log(level: string, message: string, fields: Record<string, unknown> = {}): void {
  process.stdout.write(JSON.stringify({ time: new Date().toISOString(), level, message, ...fields }) + '\n');
}

try {
  const settings = await loadIdentitySettings(process.env, DEFAULT_HOME);
  if (settings.mode !== 'builtin') {
    // svcd does not start it in external mode; started by hand, it refuses to serve.
    process.stderr.write('svc-identity: SVC_AUTH_MODE is external: the built-in issuer does not run\n');
    process.exit(2);
  }
  const credentials = await loadCredentials(settings.workDir, { mode: 'builtin' });
  const store = await UserStore.open(settings.workDir, { credentials });
  // secret-master-key encrypts what svc-identity keeps at rest (TOTP secrets, signing keys).
  const secrets = await loadMasterKey(settings.workDir);
  // Keys, grants, refresh tokens, device codes and sessions survive a restart (CONTRACT §8).
  const state = await IdentityState.open(settings.workDir, secrets, {
    onError: (error) => log('error', 'identity state', { error: (error as Error).message }),
  });
  // Grants are listed (and revocable) as sessions through the admin gRPC API.
  const sessions = new InMemorySessionRegistry();
  // A new key per start: svc-agent reads it for each request it relays (forwarded addresses).
  const relayKey = await writeRelayKey(settings.workDir);
  const server = await startIdentityServer({
    sessions,
    host: settings.host,
    issuerPort: settings.issuerPort,
    telemetryPort: settings.telemetryPort,
    store,
    automationSecret: credentials.automationSecret,
    passwordFlow: settings.passwordFlow,
    secrets,
    state,
    webRedirectUris: settings.webRedirectUris,
    relayKey,
    throttle: new SignInThrottle({ limits: settings.signInThrottle }),
    log: (level, message, fields) => log(level, message, fields),
  });
  const grpc = await startAdminGrpcServer({
    service: new AdminService({
      store,
      sessions,
      workDir: settings.workDir,
      secrets,
      signInLocks: {
        clear: (user) => server.provider.signIn.throttle.clearUsers(server.provider.signIn.keysOf(user)),
      },
      onAutomationSecretChanged: (secret) => server.provider.setAutomationSecret(secret),
      audit: (event, fields) => log('info', `admin: ${event}`, fields),
    }),
    tls: await loadOrCreateAdminTls(settings.workDir),
    listen: process.env['SVC_AUTH_GRPC_LISTEN'] || undefined,
    onError: (error, rpc) =>
      log('error', 'admin rpc failed', {
        rpc,
        error: error instanceof Error ? error.message : String(error),
      }),
  });
  const portsFile = join(settings.workDir, 'ports.identity.json');
  await writeFileAtomic(
    portsFile,
    JSON.stringify(
      { issuer: server.ports.issuer, telemetry: server.ports.telemetry, grpc: grpc.port },
      null,
      2,
    ) + '\n',
    { mode: 0o644, ownerFromDirectory: true },
  );
  log('info', 'svc-identity listening', {
    issuer: server.issuer,
    telemetry: server.ports.telemetry,
    grpc: grpc.target,
    password_flow: settings.passwordFlow,
  });
  const stop = (signal: string): void => {
    log('info', 'svc-identity stopping', { signal });
    void Promise.all([server.close(), grpc.close(), rm(portsFile, { force: true })]).then(() =>
      process.exit(0),
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
} catch (error) {
  // Messages of settings and credential errors name files and rules, never secret content.
  process.stderr.write(
    `svc-identity: cannot start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
}
