// The environment of a managed process (README "Contract: the environment of a managed process"):
// the daemon's environment minus its own SVC_* variables, then `env`, then `secret_env`, then the
// execution user's HOME/USER/LOGNAME, then the injected SVC_* variables (they win over the
// definition's), then, in cluster mode and for non-system apps, the peer services' addresses.
import type { AppDefinition } from '../../model/app-definition.ts';
import { userEnv, type OsIdentity } from '../../privilege/os-user.ts';
import type { AppLifecycle } from '../lifecycle.ts';
import type { LifecycleHook, SpawnPreparation } from './hook.ts';

export interface AppEnvironmentOptions {
  /** Extra environment of bundled system apps only (trusted programs of the install). */
  systemEnv?: Record<string, string> | undefined;
  /** The daemon's environment (default process.env): read once, except TZ (read at every start). */
  daemonEnv?: NodeJS.ProcessEnv | undefined;
}

/** The daemon's environment minus its own SVC_* settings (which may carry secrets) and TZ. */
function baseEnvironment(daemonEnv: NodeJS.ProcessEnv): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(daemonEnv)) {
    if (value !== undefined && !key.startsWith('SVC_') && key !== 'TZ') env[key] = value;
  }
  return env;
}

export class AppEnvironment {
  readonly #base: Record<string, string>;
  readonly #daemonEnv: NodeJS.ProcessEnv;
  readonly #systemEnv: Record<string, string> | undefined;

  constructor(options: AppEnvironmentOptions = {}) {
    this.#daemonEnv = options.daemonEnv ?? process.env;
    this.#base = baseEnvironment(this.#daemonEnv);
    this.#systemEnv = options.systemEnv;
  }

  /**
   * The environment of `def`'s processes and health checks before the injected variables. TZ is
   * read live: POST /svc/config {"BaseConfig": {"PosixTimezone": …}} sets or clears the daemon's
   * own TZ (config/host-config-store.ts), and processes started after it get the same zone.
   */
  of(def: AppDefinition, user: OsIdentity | undefined): Record<string, string> {
    const tz = this.#daemonEnv['TZ'];
    return {
      ...this.#base,
      ...(tz === undefined ? undefined : { TZ: tz }),
      ...(def.system ? this.#systemEnv : undefined),
      ...def.env,
      ...def.secret_env,
      ...(user === undefined ? undefined : userEnv(user)),
    };
  }
}

export interface EnvironmentHookOptions {
  environment: AppEnvironment;
  /** SVC_PROCESS_KEY of a process uuid. */
  keyOf: (processUuid: string) => string;
  /** REST base URL injected as SVC_DAEMON_URL. */
  daemonUrl: string;
  now: () => number;
  /** Cluster mode: `SVC_SERVICE_<APP>_ADDR` of the peer services, for non-system processes. */
  peerEnvironment?: (() => Record<string, string>) | undefined;
}

/** prestart (after the identity hook, whose user it needs): the spawn's complete environment. */
export class EnvironmentHook implements LifecycleHook {
  readonly #options: EnvironmentHookOptions;

  constructor(options: EnvironmentHookOptions) {
    this.#options = options;
  }

  prestart(app: AppLifecycle, spawn: SpawnPreparation): void {
    const options = this.#options;
    const env = options.environment.of(app.def, spawn.user);
    env['SVC_PROCESS_KEY'] = options.keyOf(spawn.processUuid);
    env['SVC_PROCESS_UUID'] = spawn.processUuid; // with the key: lets the orphan scan recognize it
    env['SVC_APPLICATION_NAME'] = app.name;
    env['SVC_LAUNCH_TIME'] = new Date(options.now()).toISOString();
    env['SVC_DAEMON_URL'] = options.daemonUrl;
    if (!app.def.system && options.peerEnvironment !== undefined)
      Object.assign(env, options.peerEnvironment());
    spawn.env = env;
  }
}
