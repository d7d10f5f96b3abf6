// X-Target-Host to registered nodes (spec/contract.md §3, §9): in cluster mode every node writes its
// TCP API address under `svc/cluster/endpoints/<host>` on its lease, and every node allows as a
// forward target each registered node, named by its host name (SVC_HOST_NAME, any or no port: the
// registered port is used) or by its registered TCP address exactly. A node whose lease is gone is
// no longer a target. The cache follows a watch (re-read on every change and reconnection).
import type { Etcd3 } from 'etcd3';
import { targetKey, type ForwardTargetProvider } from '../forwarding/targets.ts';
import type { Logger } from '../log/logger.ts';
import { KEYS, NodeEndpointSchema, nameUnder, parseRecord, type NodeEndpoint } from './records.ts';
import { watchRegistry } from './registry-watch.ts';
import type { RegistrySession } from './session.ts';

/** Pure: the provider over a snapshot of endpoints (host name -> endpoint). */
export function endpointTargets(endpoints: () => ReadonlyMap<string, NodeEndpoint>): ForwardTargetProvider {
  return {
    resolve(target) {
      for (const [host, endpoint] of endpoints()) {
        const address = endpoint.tcp_host.toLowerCase();
        const byName = host.toLowerCase() === target.host;
        const byAddress = address === target.host && endpoint.tcp_port === target.port;
        if (byName || byAddress)
          return {
            host: address,
            port: endpoint.tcp_port,
            key: targetKey({ host: address, port: endpoint.tcp_port }),
          };
      }
      return undefined;
    },
  };
}

export interface NodeTargets {
  provider: ForwardTargetProvider;
  close(): Promise<void>;
}

export async function startNodeTargets(options: {
  session: RegistrySession;
  /** Reads (not the session's client). */
  client: Etcd3;
  hostName: string;
  /** This node's TCP API address as peers reach it. */
  endpoint: NodeEndpoint;
  /** A new etcd client for the watch (registry-watch.ts). */
  watchClient: () => Etcd3;
  logger: Logger;
}): Promise<NodeTargets> {
  const { session, logger } = options;
  const client = options.client;
  await session.putOwned(KEYS.endpoint(options.hostName), JSON.stringify(options.endpoint));
  let endpoints = new Map<string, NodeEndpoint>();
  let reading = false;
  let again = false;
  const reread = async (): Promise<void> => {
    const all = await client.getAll().prefix(KEYS.endpointsPrefix).strings();
    const next = new Map<string, NodeEndpoint>();
    for (const [key, value] of Object.entries(all)) {
      const host = nameUnder(KEYS.endpointsPrefix, key);
      const endpoint = parseRecord(NodeEndpointSchema, value);
      if (host !== undefined && endpoint !== undefined) next.set(host, endpoint);
    }
    endpoints = next;
  };
  const refresh = (): void => {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    void reread()
      .catch((error: unknown) => logger.debug('node endpoints not re-read', { error: error as Error }))
      .finally(() => {
        reading = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  };
  const watch = watchRegistry(options.watchClient, { prefix: KEYS.endpointsPrefix }, refresh, logger);
  return {
    provider: endpointTargets(() => endpoints),
    close: () => watch.close(),
  };
}
