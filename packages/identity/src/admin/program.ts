// The svc-auth-admin program (bin/svc-auth-admin.ts), as a function so tests can run it in-process
// too. It is the system application `authadmin` (apps/authadmin.yaml).
//   SVC_AUTH_ADMIN_UI=off   the UI does not listen; the program idles until SIGTERM so that the
//                           system app stays up for health checks (spec "Administration UI")
//   SVC_AUTH_ADMIN_LISTEN   the UI listener: unix:/path, a socket of mode 0600 (default
//                           unix:$SVC_HOME/work/auth/admin-ui.sock), or a loopback host:port
//                           (reachable by every local user: unsafe on a shared host)
//   SVC_AUTH_GRPC_LISTEN    where svc-identity serves the gRPC API (default 127.0.0.1:5557); with
//                           port 0 the bound port is read from work/ports.json, else
//                           work/ports.identity.json (`grpc`)
// The bound UI port goes to work/ports.authadmin.json (`admin_ui`; a socket: `admin_ui_socket`),
// removed when off or stopped.
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '@svc/platform/atomic-file';
import { createAdminClient, type AdminClient } from './grpc-client.ts';
import { DEFAULT_GRPC_LISTEN, defaultAdminUiListen, formatListen, parseLoopbackListen } from './listen.ts';
import { loadOrCreateAdminTls } from './tls.ts';
import { startAdminUi, type AdminUi } from './ui/server.ts';

export interface AdminUiProgramOptions {
  /** The work directory (`$SVC_HOME/work`). */
  workDir: string;
  env: Readonly<Record<string, string | undefined>>;
  log: (line: string) => void;
}

export interface AdminUiProgram {
  /** Undefined when the UI is off. */
  readonly ui: AdminUi | undefined;
  close(): Promise<void>;
}

/** `SVC_AUTH_ADMIN_UI`: `on` (default, also when empty) or `off`; anything else is an error. */
export function adminUiEnabled(value: string | undefined): boolean {
  const setting = (value ?? '').trim().toLowerCase();
  if (setting === '' || setting === 'on') return true;
  if (setting === 'off') return false;
  throw new Error(`SVC_AUTH_ADMIN_UI: expected on or off, got ${JSON.stringify(value)}`);
}

async function readPorts(file: string): Promise<Record<string, number>> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Record<string, number>;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
}

/**
 * This program's own ports record, `work/ports.authadmin.json` (`admin_ui`): one writer per file,
 * svcd merges it into work/ports.json (PortsFile.mergeFrom, as for ports.identity.json).
 */
export function adminUiPortsFile(workDir: string): string {
  return join(workDir, 'ports.authadmin.json');
}

async function recordPort(workDir: string, ui: AdminUi | undefined): Promise<void> {
  const file = adminUiPortsFile(workDir);
  if (ui === undefined) await rm(file, { force: true });
  else {
    const record = ui.socketPath === undefined ? { admin_ui: ui.port } : { admin_ui_socket: ui.socketPath };
    await writeFileAtomic(file, JSON.stringify(record, null, 2) + '\n', {
      mode: 0o644,
      ownerFromDirectory: true,
    });
  }
}

export async function runAdminUiProgram(options: AdminUiProgramOptions): Promise<AdminUiProgram> {
  const { env, workDir, log } = options;
  if (!adminUiEnabled(env['SVC_AUTH_ADMIN_UI'])) {
    await recordPort(workDir, undefined);
    log('svc-auth-admin: the administration UI is disabled (SVC_AUTH_ADMIN_UI=off); idling');
    return { ui: undefined, close: async () => {} };
  }
  const grpcAddress = parseLoopbackListen(
    env['SVC_AUTH_GRPC_LISTEN'] || DEFAULT_GRPC_LISTEN,
    'SVC_AUTH_GRPC_LISTEN',
  );
  let grpcPort = grpcAddress.port;
  if (grpcPort === 0) {
    const recorded =
      (await readPorts(join(workDir, 'ports.json')))['grpc'] ??
      (await readPorts(join(workDir, 'ports.identity.json')))['grpc'];
    if (recorded === undefined)
      throw new Error('SVC_AUTH_GRPC_LISTEN has port 0 and no ports file names the grpc listener yet');
    grpcPort = recorded;
  }
  const tls = await loadOrCreateAdminTls(workDir);
  const client: AdminClient = createAdminClient(formatListen({ host: grpcAddress.host, port: grpcPort }), {
    caCert: tls.caCert,
    clientCert: tls.clientCert,
    clientKey: tls.clientKey,
  });
  let ui: AdminUi;
  try {
    ui = await startAdminUi({
      client,
      listen: env['SVC_AUTH_ADMIN_LISTEN'] || defaultAdminUiListen(workDir),
      onError: (error) =>
        log(`svc-auth-admin: unexpected error: ${error instanceof Error ? error.message : String(error)}`),
    });
  } catch (error) {
    client.close();
    throw error;
  }
  await recordPort(workDir, ui);
  log(`svc-auth-admin: administration UI listening on ${ui.url} (gRPC ${grpcAddress.host}:${grpcPort})`);
  return {
    ui,
    async close() {
      await ui.close();
      client.close();
      await recordPort(workDir, undefined);
    },
  };
}
