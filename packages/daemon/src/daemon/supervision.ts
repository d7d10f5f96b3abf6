// The supervisor as the daemon builds it: the processes it starts (managed applications and the
// bundled system applications) and the privilege boundary of what svcd starts itself. Reached only
// through the supervisor's public API (createSupervisor, SupervisorOptions).
import { dirname } from 'node:path';
import { INSTALL_ROOT, type DaemonConfig } from '@svc/platform/config';
import type { Logger } from '../log/logger.ts';
import type { UserSwitch } from '../privilege/user-switch.ts';
import { spawnerPaths, userSwitchOf } from '../supervisor/spawner/launch.ts';
import { createSupervisor, type Supervisor } from '../supervisor/supervisor.ts';
import type { Step } from './component.ts';
import type { Secrets } from './foundation.ts';

/**
 * The peer variables of cluster mode (SVC_SERVICE_<APP>_ADDR), which processes get at spawn. They
 * come from the service registry, which is built from the supervisor's cluster side after the node
 * joined: a cycle (supervisor → registry → the supervisor's spawns), closed here on purpose. Until
 * the registry `provide`s them there are none.
 */
export class PeerVariables {
  #source: () => Record<string, string> = () => ({});

  environment(): Record<string, string> {
    return this.#source();
  }

  provide(source: () => Record<string, string>): void {
    this.#source = source;
  }
}

export interface SupervisionOptions {
  readonly config: DaemonConfig;
  readonly logger: Logger;
  readonly secrets: Secrets;
  /** SVC_DAEMON_URL of every managed process: the REST listener (bound before this step). */
  readonly daemonUrl: string;
  /** svc-agent's Unix socket link, given to the bundled programs as SVC_AGENT_LINK. */
  readonly agentLinkPath: string | undefined;
  readonly executionUserOf: (principalId: string | undefined) => string | undefined;
  readonly peers: PeerVariables;
}

/** The supervisor; its component detaches it (processes keep running; the snapshot is final). */
export async function startSupervision(
  options: SupervisionOptions,
): Promise<Step<{ supervisor: Supervisor; users: UserSwitch }>> {
  const { config, peers } = options;
  const work = config.workDir;
  // The one privilege boundary of what svcd starts itself (runs, health checks, file transfers).
  const users = userSwitchOf(spawnerPaths(INSTALL_ROOT, work));
  const supervisor = await createSupervisor({
    userSwitch: users,
    ...(config.cluster === undefined ? {} : { peerEnvironment: () => peers.environment() }),
    workDir: work,
    crypter: options.secrets.crypter,
    daemonUrl: options.daemonUrl,
    logger: options.logger.child({ component: 'supervisor' }),
    executionUserOf: options.executionUserOf,
    stopGraceMs: config.stopGraceMs,
    healthIntervalMs: config.scheduleIntervalSeconds * 1000,
    outputMaxBytes: config.outputMaxBytes,
    spawnerMode: config.spawner,
    installRoot: INSTALL_ROOT,
    bundledAppsDir: config.systemAppsDir,
    // svc-identity is the built-in issuer: never started in external mode.
    skipBundled: (name) => name === 'identity' && config.authMode !== 'builtin',
    systemEnv: systemEnvironment(config, options.agentLinkPath),
    systemCwd: INSTALL_ROOT,
    processKeySecret: options.secrets.processKeySecret,
  });
  return { supervisor, users, component: { name: 'supervisor', stop: () => supervisor.detach() } };
}

/** Bundled programs get the daemon's settings and run on the daemon's own Node (`node` on PATH). */
function systemEnvironment(config: DaemonConfig, agentLinkPath: string | undefined): Record<string, string> {
  return {
    ...Object.fromEntries(
      Object.entries(process.env).filter(
        (entry): entry is [string, string] =>
          entry[0].startsWith('SVC_') &&
          entry[0] !== 'SVC_BEARER_TOKEN' &&
          entry[0] !== 'SVC_AGENT_LINK' &&
          entry[1] !== undefined,
      ),
    ),
    SVC_HOME: config.home,
    SVC_AUTH_MODE: config.authMode,
    SVC_ISSUER_PORT: String(config.issuerPort),
    // svc-identity names the agent's port in svc-web's redirect URIs (`{agent_port}`).
    SVC_AGENT_PORT: String(config.agentPort),
    SVC_AUTH_PASSWORD_FLOW: String(config.passwordFlow),
    ...(agentLinkPath === undefined ? {} : { SVC_AGENT_LINK: agentLinkPath }),
    PATH: [dirname(process.execPath), process.env['PATH']].filter(Boolean).join(':'),
  };
}
