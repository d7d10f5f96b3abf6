// Assembles svcd: configuration → work directory → TLS → secrets → authorization → supervisor →
// one dispatcher → three transports (HTTPS REST + WSS on the REST port, TLS TCP). Listeners bind
// first so that ephemeral ports are known before managed processes receive SVC_DAEMON_URL;
// requests that arrive before the supervisor is ready wait for it.
import { SvcError } from '@svc/protocol';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rm } from 'node:fs/promises';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Server as TlsServer } from 'node:tls';
import { dirname, join } from 'node:path';
import { bootstrapCredentials, loadCredentials } from '../../identity/src/credentials/bootstrap.ts';
import { passwordFlowEnabled, readOidcFile } from '../../identity/src/provider/settings.ts';
import { createDispatcher, type Authenticator } from './api/dispatcher.ts';
import { createPreflight, type Preflight } from './api/preflight.ts';
import { operations } from './api/operations/index.ts';
import { Router } from './api/router.ts';
import { STREAMED_UPLOAD_PATHS } from './api/operations/files.ts';
import type { Services } from './api/services.ts';
import type { ApiRequest, ApiResponse } from './api/types.ts';
import { METRICS_READER_APP as AGENT_APP, type AccessResolver } from './auth/access-rules.ts';
import { wwwAuthenticate } from './auth/authorizer.ts';
import { publicBaseUrl } from './auth/discovery-docs.ts';
import { ConnectionAuthority } from './auth/connection-authority.ts';
import { PolicyStore } from './auth/policy-store.ts';
import { createOidcTokenVerifier } from './auth/token-verifier.ts';
import { INSTALL_ROOT, type DaemonConfig } from './config/config.ts';
import { applyTimezone, HostConfigStore } from './config/host-config-store.ts';
import { PortsFile } from './config/ports-file.ts';
import { EventHub } from './events/event-hub.ts';
import { createForwarder } from './forwarding/index.ts';
import { createLogger, type Logger } from './log/logger.ts';
import type { ConnectionKind } from './metrics/daemon-metrics.ts';
import { loadOrCreateMasterKey } from './model/secret-crypter.ts';
import { createSupervisor } from './supervisor/supervisor.ts';
import { spawnerPaths, userSwitchOf } from './supervisor/spawner/launch.ts';
import { effectiveExecutionUser, type ExecUserSettings } from './auth/execution-user.ts';
import type { Principal } from './auth/principal.ts';
import { linkTasksToSupervisor } from './tasks/supervisor-link.ts';
import { TaskQueues } from './tasks/task-queues.ts';
import { loadTlsMaterial } from './tls/certificates.ts';
import { listenAgentLink } from './transports/agent-link.ts';
import { ConnectionGuard } from './transports/connection-guard.ts';
import { InflightBudget } from './transports/inflight-budget.ts';
import { createRestServer } from './transports/rest-transport.ts';
import { createTcpServer } from './transports/tcp-transport.ts';
import { attachWsTransport } from './transports/ws-transport.ts';
import { writeFileAtomic } from './util/atomic-file.ts';
import { readProcStat } from './supervisor/proc-stats.ts';

export interface RunningDaemon {
  readonly config: DaemonConfig;
  readonly ports: { rest: number; tcp: number };
  readonly logger: Logger;
  /** Stop listening and detach from managed processes (they keep running). */
  close(): Promise<void>;
}

/** Seed of the authorization policy in builtin mode (CONTRACT §8). */
export const BUILTIN_SEED: Record<string, string[]> = {
  admin: ['svc-admin'],
  guest: ['svc-viewer'],
  'client:svc-automation': ['svc-maintenance'],
};

async function loadProcessKeySecret(file: string): Promise<Buffer> {
  try {
    const hex = (await readFile(file, 'utf8')).trim();
    if (/^[0-9a-f]{64}$/.test(hex)) return Buffer.from(hex, 'hex');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const secret = randomBytes(32);
  await writeFileAtomic(file, secret.toString('hex') + '\n', 0o600);
  return secret;
}

function listen(server: HttpsServer | TlsServer, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function urlHost(address: string): string {
  return address.includes(':') ? `[${address}]` : address;
}

/**
 * The `svc` address of this node's report: the listen address, or the host name when svcd listens
 * on every interface (peers cannot reach 0.0.0.0).
 */
function nodeSvcUrl(config: DaemonConfig, restPort: number): string {
  const any = ['0.0.0.0', '::', ''].includes(config.listenAddress);
  return `https://${any ? config.hostName : urlHost(config.listenAddress)}:${restPort}`;
}

export async function startDaemon(
  config: DaemonConfig,
  options: { logToStderr?: boolean } = {},
): Promise<RunningDaemon> {
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

  const tls = await loadTlsMaterial({ workDir: work, hostName: config.hostName, configured: config.tls });
  const crypter = await loadOrCreateMasterKey(join(work, 'auth', 'secrets', 'secret-master-key'));
  if (config.authMode === 'builtin') {
    // Credential files (spec "Password rules" 3): create the missing ones on first start, then refuse
    // to start on any violation; the CredentialError names the file, the line and the rule.
    const adminPasswordFile = process.env['SVC_ADMIN_PASSWORD_FILE'];
    const { created } = await bootstrapCredentials(work, { mode: 'builtin', adminPasswordFile });
    if (created.length > 0) logger.info('credential files created', { files: created });
    await loadCredentials(work, { mode: 'builtin' });
    // The password grant is also off with `OIDC.password_flow: false` in config/oidc.yaml (spec).
    config.passwordFlow = passwordFlowEnabled(await readOidcFile(config.home, INSTALL_ROOT), process.env);
  }
  const policy = await PolicyStore.open(join(work, 'auth', 'policy.yaml'), {
    seed: config.authMode === 'builtin' ? BUILTIN_SEED : {},
  });
  let verifier = createOidcTokenVerifier({ issuer: config.oidcIssuer, audience: config.oidcAudience });
  // Builtin mode with SVC_ISSUER_PORT=0: the issuer URL is known once svc-identity has bound its
  // port (work/ports.identity.json, merged below); until then tokens fail as issuer-unavailable.
  const issuerFromPorts = config.authMode === 'builtin' && new URL(config.oidcIssuer).port === '0';
  applyTimezone(config.timezone);
  const hostConfig = await HostConfigStore.open(config, { setLogLevel: (level) => logger.setLevel(level) });
  const guard = new ConnectionGuard(config.limits);
  const budget = new InflightBudget({
    perConnection: config.limits.maxInflightBytesPerConnection,
    perPrincipal: config.limits.maxInflightBytesPerPrincipal,
    perAddress: config.limits.maxInflightBytesPerAddress,
    total: config.limits.maxInflightBytes,
  });
  // Always kept: GET /svc/metrics serves them to host-resource-view bearers (App Mesh 3.0), and to
  // the agent's exporter when SVC_METRICS_PORT turns that on. prom-client is a lazy module.
  const metrics = new (await import('./metrics/daemon-metrics.ts')).DaemonMetrics();

  // The one accessor of BaseConfig.DefaultExecUser / DisableExecUser.
  const execUserSettings = (): ExecUserSettings => ({
    defaultExecUser: config.defaultExecUser,
    disableExecUser: config.disableExecUser,
  });
  const executionUserOf = (principalId: string | undefined): string | undefined =>
    principalId === undefined
      ? undefined
      : effectiveExecutionUser(policy.getPrincipal(principalId)?.execution_user, execUserSettings());

  let restBaseUrl = '';
  // The principal with its effective execution user, the same object while neither the policy's
  // principal nor the execution-user settings change (no allocation per request of one token).
  const withExecUser = new WeakMap<Principal, { settings: ExecUserSettings; principal: Principal }>();
  const effectivePrincipal = (principal: Principal): Principal => {
    const settings = execUserSettings();
    const memo = withExecUser.get(principal);
    if (
      memo !== undefined &&
      memo.settings.defaultExecUser === settings.defaultExecUser &&
      memo.settings.disableExecUser === settings.disableExecUser
    )
      return memo.principal;
    const effective = {
      ...principal,
      executionUser: effectiveExecutionUser(principal.executionUser, settings),
    };
    withExecUser.set(principal, { settings, principal: effective });
    return effective;
  };
  const auth: Authenticator = {
    async authenticate(token) {
      const verified = await verifier.verify(token).catch((error: unknown) => {
        metrics.tokenRejected(error instanceof SvcError ? error.code : 'internal');
        throw error;
      });
      return effectivePrincipal(await policy.resolve(verified.principalId, verified.expiresAt));
    },
    authenticateCached(token) {
      const verified = verifier.verifyCached(token);
      const principal =
        verified === undefined ? undefined : policy.resolveKnown(verified.principalId, verified.expiresAt);
      return principal === undefined ? undefined : effectivePrincipal(principal);
    },
    // Through svc-agent the metadata URL names the agent's address (the one the client can reach).
    challenge: (description, headers) =>
      wwwAuthenticate(
        description === undefined ? undefined : 'invalid_token',
        `${publicBaseUrl(headers, restBaseUrl)}/.well-known/oauth-protected-resource`,
        description,
      ),
  };

  // Listeners first (ephemeral ports become known), then the supervisor; requests wait for it.
  let resolveReady!: (dispatch: (request: ApiRequest) => Promise<ApiResponse>) => void;
  const ready = new Promise<(request: ApiRequest) => Promise<ApiResponse>>(
    (resolve) => (resolveReady = resolve),
  );
  // Once ready, requests go straight to the dispatcher (no await of `ready` per request).
  let readyDispatch: ((request: ApiRequest) => Promise<ApiResponse>) | undefined;
  void ready.then((dispatch) => (readyDispatch = dispatch));
  const gate = (request: ApiRequest): Promise<ApiResponse> =>
    readyDispatch === undefined ? ready.then((dispatch) => dispatch(request)) : readyDispatch(request);
  let resolvePreflight!: (preflight: Preflight) => void;
  const preflightReady = new Promise<Preflight>((resolve) => (resolvePreflight = resolve));
  // svc-agent proves a relayed request with its own process key (transports/agent-relay.ts).
  const agentKey: { check?: (key: string) => boolean } = {};
  const checkAgentKey = (key: string): boolean => agentKey.check?.(key) ?? false;

  const { server: rest, guarded: restGuarded } = createRestServer({
    tls,
    dispatch: gate,
    preflight: async (request) => (await preflightReady)(request),
    limits: config.limits,
    guard,
    budget,
    logger,
    checkAgentKey,
    streamsBody: (method, path) => method === 'POST' && STREAMED_UPLOAD_PATHS.has(path),
  });
  // Set once the supervisor is up (below); until then frames still meet the dispatcher's check.
  const upgradeTarget: { check?: (header: string) => void } = {};
  attachWsTransport(rest, {
    dispatch: gate,
    auth,
    limits: config.limits,
    logger,
    checkTargetHost: (header) => upgradeTarget.check?.(header),
    checkAgentKey,
    guarded: restGuarded,
    linkGuard: guard,
    budget,
  });
  const tcp = createTcpServer({ tls, dispatch: gate, limits: config.limits, guard, budget, logger });
  // Every accepted socket of both listeners (HTTP, upgraded WSS, TCP), so that close() can end them:
  // server.close() alone waits for persistent clients to hang up, which they never do.
  const sockets = new Set<Socket>();
  for (const server of [rest, tcp])
    server.on('connection', (socket: Socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
  // Connection gauges (metrics/): counted here so that the transports stay untouched. Every
  // accepted connection of the REST port is `https`; those upgraded to WebSocket also `wss`.
  const countConnection = (socket: Duplex, kind: ConnectionKind): void => {
    metrics.connectionOpened(kind);
    socket.once('close', () => metrics.connectionClosed(kind));
  };
  rest.on('connection', (socket: Socket) => countConnection(socket, 'https'));
  rest.on('upgrade', (_req: unknown, socket: Duplex) => countConnection(socket, 'wss'));
  tcp.on('secureConnection', (socket: Socket) => countConnection(socket, 'tcp'));
  const restPort = await listen(rest, config.restPort, config.listenAddress);
  const tcpPort = await listen(tcp, config.tcpPort, config.listenAddress);
  restBaseUrl = `https://${urlHost(config.listenAddress)}:${restPort}`;
  const agentLink = await listenAgentLink(join(work, 'run', 'agent-link.sock'), rest);
  if (agentLink === undefined)
    logger.warn('svc-agent reaches svcd over loopback TCP: the path of its Unix socket link is too long', {
      path: join(work, 'run', 'agent-link.sock'),
    });

  // Cluster mode: the peer variables (SVC_SERVICE_<APP>_ADDR) come from the service registry, which
  // starts once the node has joined (below).
  const peers = { environment: (): Record<string, string> => ({}) };
  // The one privilege boundary of what svcd starts itself (runs, health checks, file transfers).
  const users = userSwitchOf(spawnerPaths(INSTALL_ROOT, work));
  const supervisor = await createSupervisor({
    userSwitch: users,
    ...(config.cluster === undefined ? {} : { peerEnvironment: () => peers.environment() }),
    workDir: work,
    crypter,
    daemonUrl: restBaseUrl,
    logger: logger.child({ component: 'supervisor' }),
    executionUserOf,
    stopGraceMs: config.stopGraceMs,
    healthIntervalMs: config.scheduleIntervalSeconds * 1000,
    outputMaxBytes: config.outputMaxBytes,
    spawnerMode: config.spawner,
    installRoot: INSTALL_ROOT,
    bundledAppsDir: config.systemAppsDir,
    // svc-identity is the built-in issuer: never started in external mode.
    skipBundled: (name) => name === 'identity' && config.authMode !== 'builtin',
    // Bundled programs get the daemon's settings and run on the daemon's own Node (`node` on PATH).
    systemEnv: {
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
      ...(agentLink === undefined ? {} : { SVC_AGENT_LINK: agentLink.path }),
      PATH: [dirname(process.execPath), process.env['PATH']].filter(Boolean).join(':'),
    },
    systemCwd: INSTALL_ROOT,
    processKeySecret: await loadProcessKeySecret(join(work, 'auth', 'process-key.secret')),
  });

  metrics.attachSupervisor(supervisor, (name) => supervisor.state(name));
  const events = new EventHub({
    supervisor,
    outputDir: join(work, 'stdout'),
    logger: logger.child({ component: 'events' }),
    onPush: (type, queued) => metrics.eventPushed(type, queued),
  });
  const tasks = new TaskQueues();
  metrics.attachTasks(tasks);
  const unlinkTasks = linkTasksToSupervisor(tasks, supervisor);

  // Cluster mode (SVC_REGISTRY_URL / Registry.Url): the registry session and the node report.
  const cluster =
    config.cluster === undefined
      ? undefined
      : await (
          await import('./cluster/cluster.ts')
        ).startCluster({
          config: config.cluster,
          hostName: config.hostName,
          svcUrl: () => config.cluster?.svcProxyUrl ?? nodeSvcUrl(config, restPort),
          labels: () => hostConfig.labels,
          logger,
        });
  const stopLabelWatch = hostConfig.onLabels(() => void cluster?.refreshReport());
  // Security in sync (Registry.EnableRegistrySecurity, default on): the policy lives in etcd.
  const securitySync =
    cluster === undefined || config.cluster?.enableRegistrySecurity !== true
      ? undefined
      : (await import('./cluster/security-sync.ts')).startSecuritySync({
          client: cluster.session.client,
          watchClient: cluster.session.watchClient(),
          store: policy,
          node: config.hostName,
          log: (level, message, fields) =>
            logger.child({ component: 'security-sync' })[level](message, fields),
        });
  // Cluster apps (worker nodes), service records and the /svc/cluster/* registry view.
  const workerSide =
    cluster === undefined
      ? undefined
      : await (
          await import('./cluster/node-apps.ts')
        ).startNodeApps(cluster, supervisor.cluster, tcpPort, logger);
  if (workerSide !== undefined) peers.environment = () => workerSide.services.environment();

  const services: Services = {
    config,
    hostConfig,
    supervisor,
    tasks,
    verifyProcessKey: (name, key) => supervisor.verifyProcessKey(name, key),
    events,
    policy,
    users,
    logger,
    metrics,
    restBaseUrl: () => restBaseUrl,
    ...(cluster === undefined ? {} : { cluster }),
    ...(workerSide === undefined ? {} : { clusterApi: workerSide.api }),
  };
  const router = new Router(operations);
  const forwarder = await createForwarder({ config, tls, tcpPort: () => tcpPort, logger });
  upgradeTarget.check = (header) => forwarder.checkUpgradeTarget(header);
  // Cluster mode: X-Target-Host may name any registered node.
  if (workerSide !== undefined) forwarder.targets.addProvider(workerSide.targets.provider);
  const resolver: AccessResolver = {
    app: (name) => supervisor.access(name),
    service: (name) => workerSide?.services.registered().includes(name) ?? false,
    subscription: (id) => events.owner(id),
    verifyProcessKey: (name, key) => supervisor.verifyProcessKey(name, key),
  };
  // Tombstoning a principal or the expiry of the token a persistent connection was authorized by
  // ends its subscriptions at once and closes the connection (auth/connection-authority.ts).
  const connections = new ConnectionAuthority({
    revoke(connection, reason) {
      events.removeConnection(connection.id);
      connection.close(
        reason === 'token_expired'
          ? 'the access token expired; reconnect with a fresh token'
          : 'the principal record was deleted',
      );
      logger.info('persistent connection revoked', { connection: connection.id, reason });
    },
  });
  const stopTombstoneWatch = policy.onTombstone((id) => connections.revokePrincipal(id));
  const dispatch = createDispatcher({
    router,
    services,
    auth,
    resolver,
    logger,
    forwarder,
    onConnectionAuthenticated: (connection, principal) =>
      connections.authenticated(connection, principal.id, principal.expiresAt),
  });
  agentKey.check = (key) => supervisor.verifyProcessKey(AGENT_APP, key) === 'ok';
  resolvePreflight(createPreflight(router, auth, resolver));
  // At debug level every request is logged (method, path without query, status): the line an
  // operator turns on with POST /svc/config {"BaseConfig": {"LogLevel": "DEBUG"}}.
  const apiLog = logger.child({ component: 'api' });
  resolveReady(
    metrics.instrument(router, dispatch, (request, response) =>
      apiLog.debug('request', {
        method: request.method,
        path: request.path.slice(0, 256),
        status: response.status,
        transport: request.transport,
      }),
    ),
  );

  const portsFile = new PortsFile(work);
  await portsFile.set('rest', restPort);
  await portsFile.set('tcp', tcpPort);
  // Who this daemon is, for `svc daemon stop` (pid + start time: a reused pid never matches).
  const pidFile = join(work, 'svcd.pid');
  await writeFileAtomic(
    pidFile,
    JSON.stringify({ pid: process.pid, start_ticks: readProcStat(process.pid)?.startTicks ?? 0 }) + '\n',
  );
  const stopPortsMerge =
    config.authMode === 'builtin'
      ? portsFile.mergeFrom('identity', (ports) => {
          if (!issuerFromPorts || ports.issuer === undefined) return;
          config.oidcIssuer = `http://127.0.0.1:${ports.issuer}/auth`;
          verifier = createOidcTokenVerifier({ issuer: config.oidcIssuer, audience: config.oidcAudience });
        })
      : () => undefined;
  // The administration UI and the agent (system apps in both modes) report their listeners the same way.
  const stopAdminPortsMerge = portsFile.mergeFrom('authadmin');
  const stopAgentPortsMerge = portsFile.mergeFrom('agent');
  logger.info('svcd started', {
    rest: restPort,
    tcp: tcpPort,
    home: config.home,
    auth_mode: config.authMode,
  });

  let closing: Promise<void> | undefined;
  return {
    config,
    ports: { rest: restPort, tcp: tcpPort },
    logger,
    close() {
      closing ??= (async () => {
        logger.info('svcd stopping; managed processes keep running');
        // Every step runs even if an earlier one fails: detaching the supervisor (which writes the
        // final snapshot that the next daemon re-attaches from) must never be skipped.
        const step = async (what: string, run: () => unknown): Promise<void> => {
          try {
            await run();
          } catch (error) {
            logger.error(`shutdown step failed: ${what}`, { error: error as Error });
          }
        };
        await step('unlink tasks', unlinkTasks);
        await step('close task queues', () => tasks.close()); // waiting submitters and fetchers get 503
        await step('close listeners', async () => {
          const closed = Promise.all([
            new Promise<void>((resolve) => rest.close(() => resolve())),
            new Promise<void>((resolve) => tcp.close(() => resolve())),
          ]);
          for (const socket of sockets) socket.destroy();
          await agentLink?.close();
          await closed;
        });
        await step('close events', () => {
          stopTombstoneWatch();
          connections.close();
          events.close();
        });
        await step('close forward links', () => forwarder.close());
        await step('stop ports merge', () => {
          stopPortsMerge();
          stopAdminPortsMerge();
          stopAgentPortsMerge();
        });
        await step('leave the cluster', async () => {
          stopLabelWatch();
          await securitySync?.close();
          await workerSide?.close();
          await cluster?.close();
        });
        await step('detach supervisor', () => supervisor.detach());
        await step('remove pid file', () => rm(pidFile, { force: true }));
        await logger.close();
      })();
      return closing;
    },
  };
}
