// The cluster test harness: a real etcd and N real svcd nodes on one machine (distinct
// SVC_HOST_NAME, ephemeral ports, one shared issuer and one shared TLS CA, so the same tokens and
// the same CA work on every node), with helpers to read the registry, kill -9 / restart a node and
// stop / start etcd. Tests wait on registry or API conditions (`waitFor`), never on sleeps.
//
//   const cluster = await startCluster({ nodes: [{ host: 'n1' }, { host: 'n2', main: false }], ttlSeconds: 3 });
//   await cluster.waitForReports(['n1', 'n2']);
//   const leader = await cluster.waitForLeader();
//   await cluster.node(leader).kill();
//   ...
//   await cluster.close();
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import {
  startEtcd,
  startTestDaemon,
  startTestIssuer,
  type TestDaemon,
  type TestEtcd,
  type TestIssuer,
} from '@svc/testkit';
import { generateMaterial } from '@svc/platform/tls';
import { KEYS, NodeReportSchema, parseRecord, type NodeReport } from '../../src/cluster/records.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.ts';

export interface ClusterNodeSpec {
  /** SVC_HOST_NAME: the node's identity in the registry. */
  host: string;
  /** Registry.IsMainNode (runs for leader); default true. */
  main?: boolean;
  /** Registry.IsWorkerNode (runs cluster apps); default true. */
  worker?: boolean;
  /** Registry.SvcProxyUrl: the address the node report advertises. */
  svcProxyUrl?: string;
  /** Labels section of the node's config.yaml. */
  labels?: Record<string, string>;
  /** Reach etcd through a TCP proxy of its own (`cluster.proxy(host)`), for partition tests. */
  viaProxy?: boolean;
  /** More environment for svcd. */
  env?: Record<string, string>;
  /** More files under SVC_HOME (e.g. `apps/<name>.yaml`). */
  files?: Record<string, string>;
}

export interface ClusterHarnessOptions {
  nodes: readonly ClusterNodeSpec[];
  /** Registry.SessionTTL of every node; default 3 s (fault tests stay short). */
  ttlSeconds?: number;
  /**
   * etcd over TLS with client certificates: a throw-away CA signs one certificate that etcd serves
   * and every node (Registry.SSL) and the test's own client present.
   */
  tls?: boolean;
}

export interface RegistryTlsFiles {
  dir: string;
  caFile: string;
  certFile: string;
  keyFile: string;
}

async function registryTlsFiles(): Promise<RegistryTlsFiles> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-test-etcd-tls-'));
  const material = await generateMaterial('etcd');
  const files = {
    dir,
    caFile: join(dir, 'ca.pem'),
    certFile: join(dir, 'etcd.pem'),
    keyFile: join(dir, 'etcd-key.pem'),
  };
  await writeFile(files.caFile, material.ca!);
  await writeFile(files.certFile, material.cert);
  await writeFile(files.keyFile, material.key, { mode: 0o600 });
  return files;
}

export interface TestClusterNode {
  readonly spec: ClusterNodeSpec;
  readonly host: string;
  /** The current svcd process (a new one after restart()). */
  readonly daemon: TestDaemon;
  running(): boolean;
  /** SIGKILL svcd (a crash: its lease stays until the TTL runs out). */
  kill(): Promise<void>;
  /** SIGTERM svcd (a clean stop: it revokes its lease). */
  stop(): Promise<void>;
  /** Starts svcd again on the same SVC_HOME (stopping it first if it still runs). */
  restart(): Promise<TestDaemon>;
}

export interface TestCluster {
  readonly etcd: TestEtcd;
  readonly issuer: TestIssuer;
  readonly ttlSeconds: number;
  /** With `tls`: the CA, certificate and key files (etcd's and every node's). */
  readonly registryTls: RegistryTlsFiles | undefined;
  /** A client of the test's own (not a node's), for reading and writing the registry. */
  readonly registry: Etcd3;
  readonly nodes: readonly TestClusterNode[];
  node(host: string): TestClusterNode;
  /** The TCP proxy between a `viaProxy` node and etcd. */
  proxy(host: string): TcpProxy;
  /** Adds and starts one more node. */
  addNode(spec: ClusterNodeSpec): Promise<TestClusterNode>;
  get(key: string): Promise<string | undefined>;
  /** Every key under `prefix` -> its value. */
  list(prefix: string): Promise<Record<string, string>>;
  /** Node reports by host (only the ones that parse). */
  nodeReports(): Promise<Record<string, NodeReport>>;
  /** The host holding the election (the oldest key under svc/cluster/leader/), or undefined. */
  leader(): Promise<string | undefined>;
  /** Waits until every host named has a node report (all running nodes when omitted). */
  waitForReports(hosts?: readonly string[], timeoutMs?: number): Promise<Record<string, NodeReport>>;
  /**
   * Waits until one host holds the election and is the only report saying `leader: true`;
   * `not` excludes a former leader.
   */
  waitForLeader(options?: { not?: string; timeoutMs?: number }): Promise<string>;
  /** Kills (default SIGKILL) or cleanly stops etcd; data stays. */
  stopEtcd(signal?: NodeJS.Signals): Promise<void>;
  startEtcd(): Promise<void>;
  /** Stops every node and etcd, removes every temp dir. */
  close(): Promise<void>;
}

function configYaml(spec: ClusterNodeSpec, ttlSeconds: number, tls: RegistryTlsFiles | undefined): string {
  const lines = [
    'Registry:',
    `  IsMainNode: ${spec.main ?? true}`,
    `  IsWorkerNode: ${spec.worker ?? true}`,
    `  SessionTTL: ${ttlSeconds}`,
  ];
  if (spec.svcProxyUrl !== undefined) lines.push(`  SvcProxyUrl: ${JSON.stringify(spec.svcProxyUrl)}`);
  if (tls !== undefined)
    lines.push(
      '  SSL:',
      `    CaFile: ${JSON.stringify(tls.caFile)}`,
      `    CertFile: ${JSON.stringify(tls.certFile)}`,
      `    KeyFile: ${JSON.stringify(tls.keyFile)}`,
    );
  const labels = Object.entries(spec.labels ?? {});
  if (labels.length > 0) {
    lines.push('Labels:');
    for (const [key, value] of labels) lines.push(`  ${JSON.stringify(key)}: ${JSON.stringify(value)}`);
  }
  return lines.join('\n') + '\n';
}

export async function startCluster(options: ClusterHarnessOptions): Promise<TestCluster> {
  const ttlSeconds = options.ttlSeconds ?? 3;
  const tls = options.tls === true ? await registryTlsFiles() : undefined;
  const etcd = await startEtcd(tls === undefined ? {} : { tls });
  const issuer = await startTestIssuer();
  const registry = new Etcd3({
    hosts: etcd.url,
    dialTimeout: 3_000,
    ...(tls === undefined
      ? {}
      : {
          credentials: {
            rootCertificate: await readFile(tls.caFile),
            certChain: await readFile(tls.certFile),
            privateKey: await readFile(tls.keyFile),
          },
        }),
  });
  const nodes: TestClusterNode[] = [];
  const proxies = new Map<string, TcpProxy>();
  /** The first node's work dir: every later node copies its TLS material (one CA). */
  let tlsSource: string | undefined;

  const launch = async (spec: ClusterNodeSpec, home: string | undefined): Promise<TestDaemon> =>
    startTestDaemon({
      issuer,
      ...(home === undefined ? {} : { home }),
      ...(home === undefined && tlsSource !== undefined ? { tlsFrom: { workDir: tlsSource } } : {}),
      files: { 'config/config.yaml': configYaml(spec, ttlSeconds, tls), ...spec.files },
      env: {
        SVC_HOST_NAME: spec.host,
        SVC_REGISTRY_URL: proxies.get(spec.host)?.url ?? etcd.url,
        ...spec.env,
      },
    });

  const addNode = async (spec: ClusterNodeSpec): Promise<TestClusterNode> => {
    if (nodes.some((node) => node.host === spec.host)) throw new Error(`duplicate host ${spec.host}`);
    if (spec.viaProxy === true) proxies.set(spec.host, await startTcpProxy(etcd.clientPort));
    let daemon = await launch(spec, undefined);
    tlsSource ??= daemon.workDir;
    let alive = true;
    const watchExit = (d: TestDaemon): void => {
      void d.exited.then(() => {
        if (daemon === d) alive = false;
      });
    };
    watchExit(daemon);
    const node: TestClusterNode = {
      spec,
      host: spec.host,
      get daemon() {
        return daemon;
      },
      running: () => alive,
      kill: () => daemon.kill(),
      stop: () => daemon.stop(),
      async restart() {
        await daemon.stop();
        daemon = await launch(spec, daemon.home);
        alive = true;
        watchExit(daemon);
        return daemon;
      },
    };
    nodes.push(node);
    return node;
  };

  const list = async (prefix: string): Promise<Record<string, string>> =>
    registry.getAll().prefix(prefix).strings();

  const nodeReports = async (): Promise<Record<string, NodeReport>> => {
    const out: Record<string, NodeReport> = {};
    for (const [key, value] of Object.entries(await list(KEYS.nodesPrefix))) {
      const report = parseRecord(NodeReportSchema, value);
      if (report !== undefined) out[key.slice(KEYS.nodesPrefix.length)] = report;
    }
    return out;
  };

  const leader = async (): Promise<string | undefined> => {
    const result = await registry
      .getAll()
      .prefix(`${KEYS.leader}/`)
      .sort('Create', 'Ascend')
      .limit(1)
      .strings();
    return Object.values(result)[0];
  };

  const cluster: TestCluster = {
    etcd,
    issuer,
    ttlSeconds,
    registryTls: tls,
    registry,
    get nodes() {
      return nodes;
    },
    node(host) {
      const found = nodes.find((node) => node.host === host);
      if (found === undefined) throw new Error(`no node ${host}`);
      return found;
    },
    proxy(host) {
      const found = proxies.get(host);
      if (found === undefined) throw new Error(`node ${host} has no proxy (viaProxy)`);
      return found;
    },
    addNode,
    get: async (key) => (await registry.get(key).string()) ?? undefined,
    list,
    nodeReports,
    leader,
    waitForReports: (hosts, timeoutMs = 30_000) => {
      const wanted = hosts ?? nodes.filter((node) => node.running()).map((node) => node.host);
      return waitFor(
        async () => {
          const reports = await nodeReports();
          return wanted.every((host) => reports[host] !== undefined) ? reports : undefined;
        },
        { timeoutMs, intervalMs: 50, what: `node reports of ${wanted.join(', ')}` },
      );
    },
    waitForLeader: ({ not, timeoutMs = 30_000 } = {}) =>
      waitFor(
        async () => {
          const host = await leader();
          if (host === undefined || host === not) return undefined;
          const reports = await nodeReports();
          const claiming = Object.entries(reports).filter(([, report]) => report.leader);
          return claiming.length === 1 && claiming[0]![0] === host ? host : undefined;
        },
        { timeoutMs, intervalMs: 50, what: `a leader${not === undefined ? '' : ` other than ${not}`}` },
      ),
    stopEtcd: (signal) => etcd.stop(signal),
    startEtcd: () => etcd.start(),
    async close() {
      const homes = nodes.map((node) => node.daemon.home);
      await Promise.all(nodes.map((node) => node.daemon.close().catch(() => undefined)));
      registry.close();
      await Promise.all([...proxies.values()].map((proxy) => proxy.close()));
      await etcd.close();
      await issuer.close();
      await Promise.all(homes.map((home) => rm(home, { recursive: true, force: true })));
      if (tls !== undefined) await rm(tls.dir, { recursive: true, force: true });
    },
  };

  try {
    // The first node alone (it creates the CA the others copy), then the rest at once.
    const [first, ...rest] = options.nodes;
    if (first !== undefined) await addNode(first);
    await Promise.all(rest.map((spec) => addNode(spec)));
  } catch (error) {
    await cluster.close();
    throw error;
  }
  return cluster;
}
