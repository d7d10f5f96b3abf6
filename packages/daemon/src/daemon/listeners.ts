// svcd's listeners: HTTPS REST with WSS on the REST port, TLS TCP, and svc-agent's Unix socket link.
//
// The one cycle of the daemon's assembly: the listeners bind before the supervisor is built, because
// the supervisor gives every managed process SVC_DAEMON_URL with the REST port (ephemeral in tests),
// while what serves their requests (the dispatcher, svc-agent's key check, the WSS upgrade's target
// check) needs the supervisor. So the listeners bind first and hold what arrives at a gate; the
// daemon opens the gate with the request path once it is assembled (`serving`), and only from then
// on are the listeners a component: the first to stop, after the task queues, so that nothing new
// arrives while the rest of the daemon stops.
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import type { Server as TlsServer } from 'node:tls';
import type { Authenticator, Dispatch } from '../api/dispatcher.ts';
import type { ApiRequest, ApiResponse } from '../api/types.ts';
import type { DaemonConfig } from '@svc/platform/config';
import type { Logger } from '../log/logger.ts';
import type { ConnectionKind } from '../metrics/daemon-metrics.ts';
import type { TlsMaterial } from '@svc/platform/tls';
import { listenAgentLink, type AgentLink } from '../transports/agent-link.ts';
import { ConnectionGuard } from '@svc/platform/connections';
import { InflightBudget } from '../transports/inflight-budget.ts';
import { createRestServer } from '../transports/rest-transport.ts';
import { createTcpServer } from '../transports/tcp-transport.ts';
import { attachWsTransport } from '../transports/ws-transport.ts';
import type { Component } from './component.ts';

/** What the listeners hand their requests to, once the daemon has assembled it. */
export interface RequestPath {
  readonly dispatch: Dispatch;
  /** Recognises svc-agent's process key on a relayed request (transports/agent-relay.ts). */
  checkAgentKey(key: string): boolean;
  /** A WSS upgrade's X-Target-Host: throws SvcError unless it is this node or an allowed target. */
  checkUpgradeTarget(header: string): void;
}

export interface Listeners {
  readonly ports: { readonly rest: number; readonly tcp: number };
  /** https://<listen address>:<REST port>: SVC_DAEMON_URL and the discovery documents' base. */
  readonly restBaseUrl: string;
  /** svc-agent's link (work/run/agent-link.sock), unless its path is too long for a Unix socket. */
  readonly agentLinkPath: string | undefined;
  /** Opens the gate: requests reach `path` from now on. The component stops the listeners. */
  serving(path: RequestPath): Component;
  /** Closes the listeners and ends every connection (also when they never served). Idempotent. */
  close(): Promise<void>;
}

export interface ListenerOptions {
  readonly config: DaemonConfig;
  readonly tls: TlsMaterial;
  readonly logger: Logger;
  /** The bearer check of a WSS upgrade. */
  readonly auth: Pick<Authenticator, 'authenticate'>;
  readonly metrics: {
    connectionOpened(kind: ConnectionKind): void;
    connectionClosed(kind: ConnectionKind): void;
  };
}

export async function bindListeners(options: ListenerOptions): Promise<Listeners> {
  const { config, tls, logger } = options;
  const limits = config.limits;
  const guard = new ConnectionGuard(limits);
  const budget = new InflightBudget({
    perConnection: limits.maxInflightBytesPerConnection,
    perPrincipal: limits.maxInflightBytesPerPrincipal,
    perAddress: limits.maxInflightBytesPerAddress,
    total: limits.maxInflightBytes,
  });
  const gate = new RequestGate();
  const checkAgentKey = (key: string): boolean => gate.checkAgentKey(key);
  const { server: rest, guarded } = createRestServer({
    tls,
    dispatch: gate.dispatch,
    limits,
    guard,
    budget,
    logger,
    checkAgentKey,
  });
  attachWsTransport(rest, {
    dispatch: gate.dispatch,
    auth: options.auth,
    limits,
    logger,
    checkTargetHost: (header) => gate.checkUpgradeTarget(header),
    checkAgentKey,
    guarded,
    linkGuard: guard,
    budget,
  });
  const tcp = createTcpServer({ tls, dispatch: gate.dispatch, limits, guard, budget, logger });
  const sockets = trackSockets([rest, tcp]);
  countConnections(rest, tcp, options.metrics);
  const restPort = await listen(rest, config.restPort, config.listenAddress);
  const tcpPort = await listen(tcp, config.tcpPort, config.listenAddress);
  const linkPath = join(config.workDir, 'run', 'agent-link.sock');
  const agentLink = await listenAgentLink(linkPath, rest);
  if (agentLink === undefined)
    logger.warn('svc-agent reaches svcd over loopback TCP: the path of its Unix socket link is too long', {
      path: linkPath,
    });
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => (closing ??= closeAll([rest, tcp], sockets, agentLink));
  return {
    ports: { rest: restPort, tcp: tcpPort },
    restBaseUrl: `https://${urlHost(config.listenAddress)}:${restPort}`,
    agentLinkPath: agentLink?.path,
    serving: (path) => ({ name: 'listeners', start: () => gate.open(path), stop: close }),
    close,
  };
}

/**
 * Holds requests until the request path is assembled; once it is, requests go straight to the
 * dispatcher (no await of the gate per request). Until then svc-agent's key is not recognised and
 * a WSS upgrade's target is not checked at the upgrade (its frames still meet the dispatcher's check).
 */
class RequestGate {
  #path: RequestPath | undefined;
  readonly #opened: Promise<RequestPath>;
  #open!: (path: RequestPath) => void;

  constructor() {
    this.#opened = new Promise((resolve) => (this.#open = resolve));
  }

  readonly dispatch = (request: ApiRequest): Promise<ApiResponse> =>
    this.#path === undefined
      ? this.#opened.then((path) => path.dispatch(request))
      : this.#path.dispatch(request);

  checkAgentKey(key: string): boolean {
    return this.#path?.checkAgentKey(key) ?? false;
  }

  checkUpgradeTarget(header: string): void {
    this.#path?.checkUpgradeTarget(header);
  }

  open(path: RequestPath): void {
    this.#path = path;
    this.#open(path);
  }
}

/**
 * Every accepted socket of both listeners (HTTP, upgraded WSS, TCP), so that closing can end them:
 * server.close() alone waits for persistent clients to hang up, which they never do.
 */
function trackSockets(servers: readonly TlsServer[]): Set<Socket> {
  const sockets = new Set<Socket>();
  for (const server of servers)
    server.on('connection', (socket: Socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
  return sockets;
}

/**
 * Connection gauges (metrics/), counted here so that the transports stay untouched. Every accepted
 * connection of the REST port is `https`; those upgraded to WebSocket also `wss`.
 */
function countConnections(rest: TlsServer, tcp: TlsServer, metrics: ListenerOptions['metrics']): void {
  const count = (socket: Duplex, kind: ConnectionKind): void => {
    metrics.connectionOpened(kind);
    socket.once('close', () => metrics.connectionClosed(kind));
  };
  rest.on('connection', (socket: Socket) => count(socket, 'https'));
  rest.on('upgrade', (_req: unknown, socket: Duplex) => count(socket, 'wss'));
  tcp.on('secureConnection', (socket: Socket) => count(socket, 'tcp'));
}

async function closeAll(
  servers: readonly TlsServer[],
  sockets: Set<Socket>,
  link: AgentLink | undefined,
): Promise<void> {
  const closed = Promise.all(
    servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
  );
  for (const socket of sockets) socket.destroy();
  await link?.close();
  await closed;
}

function listen(server: TlsServer, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

export function urlHost(address: string): string {
  return address.includes(':') ? `[${address}]` : address;
}
