// The first setup steps of svcd, which everything else stands on: the work directory and the log,
// the host configuration, the TLS material and the secrets (master key, credential files, the
// process-key secret). Also the small state files: svcd.pid and the ports merged into ports.json.
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { bootstrapCredentials, loadCredentials, passwordFlowEnabled, readOidcFile } from '@svc/identity';
import { INSTALL_ROOT, PortsFile, type DaemonConfig, type ListenerName } from '@svc/platform/config';
import { applyTimezone, HostConfigStore } from '../config/host-config-store.ts';
import { createLogger, type Logger, type RootLogger } from '../log/logger.ts';
import { loadOrCreateMasterKey, type SecretCrypter } from '../model/secret-crypter.ts';
import { readProcStat } from '../supervisor/proc-stats.ts';
import { loadTlsMaterial, type TlsMaterial } from '@svc/platform/tls';
import { writeFileAtomic } from '@svc/platform/atomic-file';
import type { Step } from './component.ts';

/** work/ (0700) with its directories, and the log in work/server.log; the log closes last. */
export async function openLog(
  config: DaemonConfig,
  options: { logToStderr?: boolean },
): Promise<Step<{ logger: RootLogger }>> {
  const work = config.workDir;
  await mkdir(work, { recursive: true, mode: 0o700 });
  await chmod(work, 0o700);
  for (const dir of ['apps', 'stdout', 'config', 'auth/secrets', 'ssl', 'run'])
    await mkdir(join(work, dir), { recursive: true, mode: 0o700 });
  const logger = createLogger({
    file: join(work, 'server.log'),
    maxFileBytes: config.limits.logMaxBytes,
    level: config.logLevel,
    stderr: options.logToStderr ?? false,
  });
  return { logger, component: { name: 'log', stop: () => logger.close() } };
}

/** The host configuration (work/config/config.yaml, POST /svc/config), and its time zone applied. */
export function openHostConfig(config: DaemonConfig, logger: RootLogger): Promise<HostConfigStore> {
  applyTimezone(config.timezone);
  return HostConfigStore.open(config, { setLogLevel: (level) => logger.setLevel(level) });
}

export interface Secrets {
  readonly tls: TlsMaterial;
  /** `secret_env` values and svc-identity's store (work/auth/secrets/secret-master-key). */
  readonly crypter: SecretCrypter;
  /** The HMAC key of process keys (work/auth/process-key.secret). */
  readonly processKeySecret: Buffer;
}

/**
 * TLS material (generated on first start), the master key, and in builtin mode the credential
 * files: created when missing, then checked; a violation stops svcd (the error names the file,
 * the line and the rule) before anything listens.
 */
export async function loadSecrets(config: DaemonConfig, logger: Logger): Promise<Secrets> {
  const work = config.workDir;
  const tls = await loadTlsMaterial({ workDir: work, hostName: config.hostName, configured: config.tls });
  const crypter = await loadOrCreateMasterKey(join(work, 'auth', 'secrets', 'secret-master-key'));
  if (config.authMode === 'builtin') {
    const adminPasswordFile = process.env['SVC_ADMIN_PASSWORD_FILE'];
    const { created } = await bootstrapCredentials(work, { mode: 'builtin', adminPasswordFile });
    if (created.length > 0) logger.info('credential files created', { files: created });
    await loadCredentials(work, { mode: 'builtin' });
    // The password grant is also off with `OIDC.password_flow: false` in config/oidc.yaml (spec).
    config.passwordFlow = passwordFlowEnabled(await readOidcFile(config.home, INSTALL_ROOT), process.env);
  }
  const processKeySecret = await loadProcessKeySecret(join(work, 'auth', 'process-key.secret'));
  return { tls, crypter, processKeySecret };
}

async function loadProcessKeySecret(file: string): Promise<Buffer> {
  try {
    const hex = (await readFile(file, 'utf8')).trim();
    if (/^[0-9a-f]{64}$/.test(hex)) return Buffer.from(hex, 'hex');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const secret = randomBytes(32);
  await writeFileAtomic(file, secret.toString('hex') + '\n', { mode: 0o600 });
  return secret;
}

/**
 * work/svcd.pid: who this daemon is, for `svc daemon stop` (pid + start time: a reused pid never
 * matches). Removed only after the supervisor has detached.
 */
export function pidFile(work: string): Step<object> {
  const file = join(work, 'svcd.pid');
  const record = { pid: process.pid, start_ticks: readProcStat(process.pid)?.startTicks ?? 0 };
  return {
    component: {
      name: 'pid file',
      start: () => writeFileAtomic(file, JSON.stringify(record) + '\n'),
      stop: () => rm(file, { force: true }),
    },
  };
}

/**
 * work/ports.json: svcd's own listeners, and what the system applications report in
 * work/ports.<program>.json (svc-identity, the administration UI, svc-agent), merged while they run.
 * `onIdentity` hears svc-identity's ports (its issuer port, when that was ephemeral).
 */
export function portsFile(
  config: DaemonConfig,
  ports: { readonly rest: number; readonly tcp: number },
  onIdentity: (ports: Partial<Record<ListenerName, number>>) => void,
): Step<object> {
  const file = new PortsFile(config.workDir);
  const stops: (() => void)[] = [];
  return {
    component: {
      name: 'ports merge',
      async start() {
        await file.set('rest', ports.rest);
        await file.set('tcp', ports.tcp);
        if (config.authMode === 'builtin') stops.push(file.mergeFrom('identity', onIdentity));
        stops.push(file.mergeFrom('authadmin'), file.mergeFrom('agent'));
      },
      stop: () => stops.splice(0).forEach((stop) => stop()),
    },
  };
}
