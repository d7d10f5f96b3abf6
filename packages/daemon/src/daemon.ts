// svcd assembled from setup steps (src/daemon/*), in the manner of Nomad's agent (NewAgent runs
// setupServer, setupClient…; Shutdown stops in reverse): each step builds one subsystem from what
// the steps before it built and returns it with its component, and the daemon keeps the components
// in the order they went live and stops them in reverse. Adding a subsystem is one step here.
//
//   goes live, in order                          stops, in reverse
//   log            work/server.log               closed last
//   pid file       work/svcd.pid                 removed after the supervisor detached
//   supervisor     processes, SVC_DAEMON_URL     detached (processes keep running)
//   cluster        registry session, node apps   left (cluster mode only)
//   ports merge    work/ports.json               merges stop
//   forward links  X-Target-Host gateway         links closed
//   events         subscriptions, revocations    subscriptions end
//   listeners      REST/WSS, TCP, agent link     closed, every connection ended
//   task queues    worker task RPC               waiting submitters and fetchers get 503
//   task link      queues ↔ supervisor events    unlinked first
//
// The listeners bind before the supervisor (its processes need the REST port in SVC_DAEMON_URL) but
// go live last, when the request path is assembled: requests that arrive before wait at their gate
// (daemon/listeners.ts). The steps without a component (host configuration, TLS and secrets, metrics,
// the policy and token verifier) come first; a failed start stops what went live, in reverse.
import type { DaemonConfig } from '@svc/platform/config';
import type { Logger, RootLogger } from './log/logger.ts';
import { openCallerAccess } from './daemon/access.ts';
import { joinCluster } from './daemon/cluster-member.ts';
import { ComponentList } from './daemon/component.ts';
import { loadSecrets, openHostConfig, openLog, pidFile, portsFile } from './daemon/foundation.ts';
import { bindListeners, type Listeners } from './daemon/listeners.ts';
import { assembleRequestPath, startEvents, startForwarding, taskQueues } from './daemon/request-path.ts';
import { PeerVariables, startSupervision } from './daemon/supervision.ts';

export interface RunningDaemon {
  readonly config: DaemonConfig;
  readonly ports: { rest: number; tcp: number };
  readonly logger: Logger;
  /** Stop listening and detach from managed processes (they keep running). */
  close(): Promise<void>;
}

export class Daemon implements RunningDaemon {
  readonly config: DaemonConfig;
  readonly logger: Logger;
  readonly ports: { rest: number; tcp: number };
  readonly #components: ComponentList;
  #closing: Promise<void> | undefined;

  private constructor(
    config: DaemonConfig,
    logger: Logger,
    ports: Listeners['ports'],
    components: ComponentList,
  ) {
    this.config = config;
    this.logger = logger;
    this.ports = { ...ports };
    this.#components = components;
  }

  static async start(config: DaemonConfig, options: { logToStderr?: boolean } = {}): Promise<Daemon> {
    const components = new ComponentList();
    const { logger } = await components.start(await openLog(config, options));
    try {
      const { ports } = await Daemon.#assemble(config, logger, components);
      logger.info('svcd started', {
        rest: ports.rest,
        tcp: ports.tcp,
        home: config.home,
        auth_mode: config.authMode,
        components: components.names.join(' → '),
      });
      return new Daemon(config, logger, ports, components);
    } catch (error) {
      logger.error('svcd failed to start; stopping what started', { error: error as Error });
      await Daemon.#stop(components, logger);
      throw error;
    }
  }

  /** Stops every component in reverse; safe to call more than once. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.logger.info('svcd stopping; managed processes keep running', {
        components: this.#components.names.reverse().join(' → '),
      });
      await Daemon.#stop(this.#components, this.logger);
    })();
    return this.#closing;
  }

  static #stop(components: ComponentList, logger: Logger): Promise<void> {
    return components.stopAll((component, error) =>
      logger.error(`shutdown step failed: ${component.name}`, { error: error as Error }),
    );
  }

  /**
   * The setup steps, in order. The listeners are bound before the components that need their port
   * and serve once everything behind them is live; should a step fail before, they are closed here.
   */
  static async #assemble(
    config: DaemonConfig,
    logger: RootLogger,
    components: ComponentList,
  ): Promise<Listeners> {
    const hostConfig = await openHostConfig(config, logger);
    const secrets = await loadSecrets(config, logger);
    // Always kept: GET /svc/metrics serves them to host-resource-view bearers (App Mesh 3.0), and
    // to the agent's exporter when SVC_METRICS_PORT turns that on. prom-client is a lazy module.
    const metrics = new (await import('./metrics/daemon-metrics.ts')).DaemonMetrics();
    const access = await openCallerAccess(config, metrics);
    const listeners = await bindListeners({
      config,
      tls: secrets.tls,
      logger,
      auth: access.authenticator,
      metrics,
    });
    const { ports, restBaseUrl } = listeners;
    try {
      await components.start(pidFile(config.workDir));
      const peers = new PeerVariables();
      const { supervisor, users } = await components.start(
        await startSupervision({
          config,
          logger,
          secrets,
          daemonUrl: restBaseUrl,
          agentLinkPath: listeners.agentLinkPath,
          executionUserOf: access.executionUserOf,
          peers,
        }),
      );
      metrics.attachSupervisor(supervisor, (name) => supervisor.state(name));
      const { policy } = access;
      const { cluster, nodeApps } = await components.start(
        await joinCluster({ config, hostConfig, policy, supervisor, ports, peers, logger }),
      );
      await components.start(portsFile(config, ports, (identity) => access.identityPorts(identity)));
      const { tls } = secrets;
      const { forwarder } = await components.start(
        await startForwarding({ config, tls, tcpPort: ports.tcp, nodeApps, logger }),
      );
      const { events, connections } = await components.start(
        startEvents({ config, supervisor, policy, metrics, logger }),
      );
      const { tasks, queues, link } = taskQueues(supervisor, metrics);
      const path = assembleRequestPath({
        config,
        hostConfig,
        access,
        restBaseUrl,
        supervisor,
        users,
        tasks,
        events,
        connections,
        forwarder,
        cluster,
        nodeApps,
        metrics,
        logger,
      });
      await components.start({ component: listeners.serving(path) });
      await components.start({ component: queues });
      await components.start({ component: link });
      return listeners;
    } catch (error) {
      await listeners.close(); // bound, perhaps not serving yet: its component may not be live
      throw error;
    }
  }
}

export function startDaemon(
  config: DaemonConfig,
  options: { logToStderr?: boolean } = {},
): Promise<RunningDaemon> {
  return Daemon.start(config, options);
}
