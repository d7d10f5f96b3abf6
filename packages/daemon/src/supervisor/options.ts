// What daemon.ts (and the tests) configure a supervisor with, and the defaults.
import type { Logger } from '../log/logger.ts';
import type { SecretCrypter } from '../model/secret-crypter.ts';
import type { UserSwitch } from '../privilege/user-switch.ts';
import type { ProcessRunner } from './process-runner.ts';
import type { SpawnerMode } from './spawner/launch.ts';

export interface SupervisorOptions {
  workDir: string;
  crypter: SecretCrypter;
  /** REST base URL injected as SVC_DAEMON_URL. */
  daemonUrl: string;
  logger: Logger;
  now?: () => number;
  /** SIGTERM -> SIGKILL grace (default 5000 ms). */
  stopGraceMs?: number;
  /** health_check_cmd period (default 10 s). */
  healthIntervalMs?: number;
  /** Cap of one output file on disk in bytes (config `output_max_bytes`); default 16 MiB. */
  outputMaxBytes?: number;
  /** Directory of bundled system apps (*.yaml, loaded trusted). */
  bundledAppsDir?: string;
  /** Bundled apps not to load (e.g. `identity` in external auth mode). */
  skipBundled?: (name: string) => boolean;
  /**
   * Extra environment of bundled system apps only (trusted programs of the install): the daemon's
   * SVC_* settings and a PATH whose `node` is the daemon's own Node.
   */
  systemEnv?: Record<string, string>;
  /** Working directory of a bundled system app that names none (the install root). */
  systemCwd?: string;
  /** Key of the process keys: HMAC-SHA256(processKeySecret, process_uuid). */
  processKeySecret: Buffer;
  /**
   * The OS user name the apps of principal `owner` run as (its `execution_user`, else
   * BaseConfig.DefaultExecUser), undefined = the daemon's own user. Asked at every start, so a
   * change of the principal's record applies from the next start. System apps never ask.
   */
  executionUserOf?: (owner: string | undefined) => string | undefined;
  /**
   * SVC_SPAWNER: `native` (svc-spawner, or the start fails), `inprocess`, or `auto` (the spawner
   * when it can be built and started, else in-process, logged). Ignored when `runner` is given.
   */
  spawnerMode?: SpawnerMode;
  /** Where packages/spawner is (the install root). */
  installRoot?: string;
  /**
   * The privilege boundary of the processes svcd starts itself (in-process runner, health checks);
   * default: svc-spawner's `exec` mode from the install root. daemon.ts passes the one it shares
   * with file transfers.
   */
  userSwitch?: UserSwitch;
  /** Test seams. */
  runner?: ProcessRunner;
  cgroupRoot?: string;
  /** Period of the liveness poll of adopted processes (default 250 ms). */
  adoptedPollMs?: number;
  /**
   * Cluster mode: the peer services' variables (`SVC_SERVICE_<APP>_ADDR`) added to the environment
   * of every non-system process at its start (cluster/services.ts).
   */
  peerEnvironment?: () => Record<string, string>;
}

export const DEFAULT_STOP_GRACE_MS = 5_000;
export const DEFAULT_HEALTH_INTERVAL_MS = 10_000;
export const DEFAULT_ADOPTED_POLL_MS = 250;
