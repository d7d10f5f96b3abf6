// The cluster registry's records and key layout (spec: "Cluster registry records"; spec/contract.md
// §9): what every node writes to and reads from etcd. One place for the keys and the shapes, so the
// session, the leader, the scheduler, the workers, the API and the security sync agree.
import { z } from 'zod';

/** Every key svc writes lives under this prefix. */
export const REGISTRY_ROOT = 'svc/';

export const KEYS = {
  nodesPrefix: 'svc/cluster/nodes/',
  node: (host: string): string => `svc/cluster/nodes/${host}`,
  /** etcd election prefix among IsMainNode nodes. */
  leader: 'svc/cluster/leader',
  tasksPrefix: 'svc/cluster/tasks/',
  task: (app: string): string => `svc/cluster/tasks/${app}`,
  topologyPrefix: 'svc/cluster/topology/',
  topology: (host: string): string => `svc/cluster/topology/${host}`,
  servicesPrefix: 'svc/services/',
  servicePrefix: (app: string): string => `svc/services/${app}/`,
  service: (app: string, host: string): string => `svc/services/${app}/${host}`,
  securityPrefix: 'svc/security/',
  /** Changed by every write of the shared policy; writers compare its mod_revision (no lost update). */
  securityVersion: 'svc/security/version',
  securityRolesPrefix: 'svc/security/roles/',
  /** A custom role: JSON array of permissions. */
  securityRole: (name: string): string => `svc/security/roles/${name}`,
  securityPrincipalsPrefix: 'svc/security/principals/',
  /** A principal record: JSON `{roles, status, execution_user?}`; the id is the rest of the key, as is. */
  securityPrincipal: (id: string): string => `svc/security/principals/${id}`,
  /** Where a node's TCP API listens (X-Target-Host to a registered node), on the node's lease. */
  endpointsPrefix: 'svc/cluster/endpoints/',
  endpoint: (host: string): string => `svc/cluster/endpoints/${host}`,
} as const;

/** The last path segment of a key under `prefix` (a host or app name), or undefined. */
export function nameUnder(prefix: string, key: string): string | undefined {
  if (!key.startsWith(prefix)) return undefined;
  const rest = key.slice(prefix.length);
  return rest === '' || rest.includes('/') ? undefined : rest;
}

/** Node report, exactly the spec's fields, under `svc/cluster/nodes/<host_name>` on the node's lease. */
export const NodeReportSchema = z.object({
  svc: z.string(),
  label: z.record(z.string(), z.string()),
  leader: z.boolean(),
  resource: z.object({
    cpu_cores: z.number().int().nonnegative(),
    mem_total_bytes: z.number().int().nonnegative(),
  }),
});
export type NodeReport = z.infer<typeof NodeReportSchema>;

/** Cluster task under `svc/cluster/tasks/<app_name>`: what to run, how many, where. */
export const ClusterTaskSchema = z.object({
  replication: z.number().int().min(0).max(10_000),
  port: z.number().int().min(0).max(65_535),
  memoryMB: z.number().int().min(0),
  /** Node selector: label name (or `HOST_NAME`) -> required value; `*` and `?` wildcards. */
  condition: z.record(z.string(), z.string()),
  /** The application definition each replica runs (`name`, `command`, `shell`, ...). */
  content: z.record(z.string(), z.unknown()),
});
export type ClusterTask = z.infer<typeof ClusterTaskSchema>;

/** One entry of a host's topology (`svc/cluster/topology/<host_name>` holds an array of them). */
export const TopologyEntrySchema = z.object({
  app: z.string(),
  /** `YYYY-MM-DD HH:MM:SS+ZZ` (numeric offset), kept while the placement stays. */
  schedule_time: z.string(),
});
export type TopologyEntry = z.infer<typeof TopologyEntrySchema>;
export const HostTopologySchema = z.array(TopologyEntrySchema);
/** The whole schedule: host -> its entries. */
export type Topology = Record<string, TopologyEntry[]>;

/** A discoverable service replica under `svc/services/<app>/<host>` on the node's lease. */
export const ServiceRecordSchema = z.object({
  address: z.string(),
  port: z.number().int().min(1).max(65_535),
  health_url: z.string(),
});
export type ServiceRecord = z.infer<typeof ServiceRecordSchema>;

/**
 * A node's TCP API address under `svc/cluster/endpoints/<host_name>` on its lease: the node report
 * keeps exactly the spec's fields, and its `svc` (the HTTPS address) does not say the TCP port that
 * `X-Target-Host` forwarding connects to.
 */
export const NodeEndpointSchema = z.object({
  tcp_host: z.string().min(1).max(253),
  tcp_port: z.number().int().min(1).max(65_535),
});
export type NodeEndpoint = z.infer<typeof NodeEndpointSchema>;

/** Parses a registry value as JSON of the given shape; undefined for anything else (never throws). */
export function parseRecord<T>(
  schema: z.ZodType<T>,
  value: string | Buffer | null | undefined,
): T | undefined {
  if (value === null || value === undefined) return undefined;
  try {
    const parsed = schema.safeParse(JSON.parse(value.toString()));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
