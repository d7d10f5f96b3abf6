// Service registration (spec "Cluster-mode behavior" 5; spec/contract.md §7, §9): every cluster app
// with a `port` placed on this node is a discoverable service replica under
// `svc/services/<app>/<host>` on the node's lease, with a health URL pointing at the app health API;
// processes find their peers through `SVC_SERVICE_<APP>_ADDR` = every registered replica's
// `host:port`, comma-separated, read from a cache that a watch keeps current.
import type { Etcd3 } from 'etcd3';
import type { Logger } from '../log/logger.ts';
import { KEYS, ServiceRecordSchema, parseRecord, type ServiceRecord } from './records.ts';
import { watchRegistry, type RegistryWatch } from './registry-watch.ts';
import type { RegistrySession } from './session.ts';

/** `SVC_SERVICE_<APP>_ADDR`: the app name upper-cased, every character but A-Z and 0-9 as `_`. */
export function serviceEnvName(app: string): string {
  return `SVC_SERVICE_${app.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_ADDR`;
}

/** `host:port` of a replica (IPv6 literals in brackets). */
export function replicaAddress(record: ServiceRecord): string {
  return `${record.address.includes(':') ? `[${record.address}]` : record.address}:${record.port}`;
}

/**
 * The peer variables for every service: replicas in host-name order, so the same registry gives the
 * same environment. Two apps whose names map to one variable share it (their replicas merged).
 */
export function peerEnvironment(
  services: ReadonlyMap<string, ReadonlyMap<string, ServiceRecord>>,
): Record<string, string> {
  const merged = new Map<string, string[]>();
  for (const app of [...services.keys()].sort()) {
    const replicas = services.get(app)!;
    const name = serviceEnvName(app);
    const list = merged.get(name) ?? [];
    for (const host of [...replicas.keys()].sort()) list.push(replicaAddress(replicas.get(host)!));
    merged.set(name, list);
  }
  return Object.fromEntries(
    [...merged].filter(([, list]) => list.length > 0).map(([k, v]) => [k, v.join(',')]),
  );
}

/** The record a node writes for one of its replicas. */
export function serviceRecord(svcUrl: string, app: string, port: number): ServiceRecord {
  const url = new URL(svcUrl);
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const base = svcUrl.replace(/\/+$/, '');
  return { address: host, port, health_url: `${base}/svc/app/${encodeURIComponent(app)}/health` };
}

export interface ServiceRegistry {
  /** The peer variables as of now (synchronous: read at every process start). */
  environment(): Record<string, string>;
  /** Registers this node's replica of `app` (port > 0), or withdraws it (undefined or 0). */
  set(app: string, port: number | undefined): Promise<void>;
  /** The apps this node registers now. */
  registered(): string[];
  close(): Promise<void>;
}

export function createServiceRegistry(options: {
  session: RegistrySession;
  /** Reads (not the session's client: its failures during an outage must not hold up keepalives). */
  client: Etcd3;
  hostName: string;
  svcUrl: () => string;
  /** A new etcd client for the watch (registry-watch.ts). */
  watchClient: () => Etcd3;
  logger: Logger;
}): ServiceRegistry {
  const { session, hostName, logger } = options;
  const client = options.client;
  let cache = new Map<string, Map<string, ServiceRecord>>();
  let environment: Record<string, string> = {};
  const mine = new Map<string, number>();
  let reading: Promise<void> | undefined;
  let again = false;

  const reread = async (): Promise<void> => {
    const all = await client.getAll().prefix(KEYS.servicesPrefix).strings();
    const next = new Map<string, Map<string, ServiceRecord>>();
    for (const [key, value] of Object.entries(all)) {
      const rest = key.slice(KEYS.servicesPrefix.length).split('/');
      const record = parseRecord(ServiceRecordSchema, value);
      if (rest.length !== 2 || rest[0] === '' || rest[1] === '' || record === undefined) continue;
      let replicas = next.get(rest[0]!);
      if (replicas === undefined) next.set(rest[0]!, (replicas = new Map<string, ServiceRecord>()));
      replicas.set(rest[1]!, record);
    }
    cache = next;
    environment = peerEnvironment(cache);
  };
  /** One re-read at a time; changes during one cause one more. */
  const refresh = (): void => {
    if (reading !== undefined) {
      again = true;
      return;
    }
    reading = reread()
      .catch((error: unknown) => logger.debug('service records not re-read', { error: error as Error }))
      .finally(() => {
        reading = undefined;
        if (again) {
          again = false;
          refresh();
        }
      });
  };
  const watch: RegistryWatch = watchRegistry(
    options.watchClient,
    { prefix: KEYS.servicesPrefix },
    refresh,
    logger,
  );

  return {
    environment: () => ({ ...environment }),
    async set(app, port) {
      if (port === undefined || port <= 0) {
        if (!mine.has(app)) return;
        mine.delete(app);
        await session.deleteOwned(KEYS.service(app, hostName));
        logger.info('service replica withdrawn', { app });
        return;
      }
      if (mine.get(app) === port) return;
      mine.set(app, port);
      await session.putOwned(
        KEYS.service(app, hostName),
        JSON.stringify(serviceRecord(options.svcUrl(), app, port)),
      );
      logger.info('service replica registered', { app, port });
    },
    registered: () => [...mine.keys()],
    async close() {
      await watch.close();
    },
  };
}
