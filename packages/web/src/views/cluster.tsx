// Cluster mode (docs/cluster.md): the registry's nodes (leader, labels, resources), the topology
// by host (which cluster applications the leader placed where) and the cluster applications. The
// registry is read on open, on "Refresh" and every 10 s while the page is visible.
import { useEffect } from 'preact/hooks';
import { can } from '../access.ts';
import { getJson, useResource } from '../admin/use-resource.ts';
import { formatBytes } from '../format.ts';
import type { ViewProps } from '../views.ts';

const REFRESH_MS = 10_000;

interface NodeReport {
  svc: string;
  label: Record<string, string>;
  leader: boolean;
  resource: { cpu_cores: number; mem_total_bytes: number };
}

interface ClusterTask {
  replication: number;
  port: number;
  memoryMB: number;
  condition: Record<string, string>;
  content: Record<string, unknown>;
  placements: { host: string; schedule_time: string }[];
}

type Topology = Record<string, { app: string; schedule_time: string }[]>;

interface ClusterState {
  nodes: Record<string, NodeReport>;
  topology: Topology;
  apps: Record<string, ClusterTask> | undefined;
}

async function readCluster(): Promise<ClusterState> {
  const [nodes, topology, apps] = await Promise.all([
    getJson<Record<string, NodeReport>>('/svc/cluster/nodes'),
    can('getClusterTopology') ? getJson<Topology>('/svc/cluster/topology') : Promise.resolve({}),
    can('listClusterApplications')
      ? getJson<Record<string, ClusterTask>>('/svc/cluster/applications')
      : Promise.resolve(undefined),
  ]);
  return { nodes, topology, apps };
}

function Labels({ map }: { map: Record<string, string> }) {
  const entries = Object.entries(map);
  if (entries.length === 0) return <span class="muted">–</span>;
  return (
    <span class="labels">
      {entries.map(([k, v]) => (
        <span key={k} class="badge mono">
          {k}={v}
        </span>
      ))}
    </span>
  );
}

export default function Cluster(_props: ViewProps) {
  const cluster = useResource(readCluster);
  const { reload } = cluster;
  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void reload();
    }, REFRESH_MS);
    return () => clearInterval(timer);
  }, [reload]);
  const nodes = Object.entries(cluster.data?.nodes ?? {}).sort(([a], [b]) => a.localeCompare(b));
  const hosts = [
    ...new Set([...nodes.map(([host]) => host), ...Object.keys(cluster.data?.topology ?? {})]),
  ].sort();
  const apps = Object.entries(cluster.data?.apps ?? {}).sort(([a], [b]) => a.localeCompare(b));

  return (
    <section class="admin cluster">
      <div class="toolbar">
        <h1>Cluster</h1>
        <button type="button" onClick={() => void cluster.reload()} disabled={cluster.loading}>
          Refresh
        </button>
      </div>
      {cluster.error !== undefined && (
        <p class="note error" role="alert">
          {cluster.error}
        </p>
      )}
      <h2 id="nodes-title">Nodes</h2>
      <div class="table-wrap">
        <table class="grid" aria-labelledby="nodes-title" aria-busy={cluster.loading}>
          <thead>
            <tr>
              <th scope="col">Host</th>
              <th scope="col">Role</th>
              <th scope="col">Labels</th>
              <th scope="col" class="num">
                CPU cores
              </th>
              <th scope="col" class="num">
                Memory
              </th>
              <th scope="col">Address</th>
            </tr>
          </thead>
          <tbody>
            {nodes.map(([host, node]) => (
              <tr key={host} data-node={host}>
                <td class="mono">{host}</td>
                <td>
                  {node.leader ? (
                    <span class="badge ok">leader</span>
                  ) : (
                    <span class="badge muted">member</span>
                  )}
                </td>
                <td>
                  <Labels map={node.label} />
                </td>
                <td class="num">{node.resource.cpu_cores}</td>
                <td class="num">{formatBytes(node.resource.mem_total_bytes)}</td>
                <td class="mono">{node.svc}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h2 id="topology-title">Topology</h2>
      <ul class="topology" aria-labelledby="topology-title">
        {hosts.map((host) => {
          const placed = cluster.data?.topology[host] ?? [];
          return (
            <li key={host} class="panel" data-host={host}>
              <h3 class="mono">{host}</h3>
              {placed.length === 0 ? (
                <p class="muted">Nothing placed.</p>
              ) : (
                <ul>
                  {placed.map((entry) => (
                    <li key={entry.app}>
                      <span class="mono">{entry.app}</span>{' '}
                      <span class="muted since">placed {entry.schedule_time}</span>
                    </li>
                  ))}
                </ul>
              )}
            </li>
          );
        })}
      </ul>
      {cluster.data?.apps !== undefined && (
        <>
          <h2 id="cluster-apps-title">Cluster applications</h2>
          <div class="table-wrap">
            <table class="grid" aria-labelledby="cluster-apps-title">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col" class="num">
                    Replicas
                  </th>
                  <th scope="col" class="num">
                    Port
                  </th>
                  <th scope="col" class="num">
                    Memory
                  </th>
                  <th scope="col">Condition</th>
                  <th scope="col">Placed on</th>
                </tr>
              </thead>
              <tbody>
                {apps.length === 0 && (
                  <tr>
                    <td colSpan={6} class="muted">
                      No cluster applications.
                    </td>
                  </tr>
                )}
                {apps.map(([name, task]) => (
                  <tr key={name} data-cluster-app={name}>
                    <td class="mono">{name}</td>
                    <td class="num">
                      {task.placements.length} / {task.replication}
                    </td>
                    <td class="num">{task.port === 0 ? '–' : task.port}</td>
                    <td class="num">{task.memoryMB === 0 ? '–' : `${task.memoryMB} MB`}</td>
                    <td>
                      <Labels map={task.condition} />
                    </td>
                    <td class="mono">{task.placements.map((p) => p.host).join(', ')}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}
