// Effective configuration: config/config.yaml, overlaid by work/config/config.yaml, overlaid by
// environment variables (CONTRACT §3). The files are sectioned documents (config-schema.ts; the
// earlier flat shape is still read). Every value is validated; a bad file or variable stops the
// daemon with a message naming the source and the key.
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import {
  ConfigDocumentError,
  mergeConfigDocuments,
  parseConfigFileDocument,
  type ConfigDocument,
} from './config-schema.ts';
import { INSTALL_ROOT } from './install-root.ts';
import { clusterConfigOf, type ClusterConfig } from './registry-config.ts';

export type ConfigFile = ConfigDocument;

export interface Limits {
  maxBodyBytes: number;
  maxFrameBytes: number;
  maxConnections: number;
  maxConnectionsPerIp: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  idleTimeoutMs: number;
  /** server.log rotates past this size (4 rotated files kept). */
  logMaxBytes: number;
  /** The agent's MCP sessions: in all, per principal, idle time before one closes (docs/mcp.md). */
  mcpMaxSessions: number;
  mcpMaxSessionsPerPrincipal: number;
  mcpSessionIdleMs: number;
  /** From accept to the first request, TLS handshake included (connection-deadlines.ts). */
  handshakeTimeoutMs: number;
  /** In-flight request-body budgets (transports/inflight-budget.ts). */
  maxInflightBytesPerConnection: number;
  maxInflightBytesPerPrincipal: number;
  maxInflightBytesPerAddress: number;
  maxInflightBytes: number;
}

export interface DaemonConfig {
  home: string;
  workDir: string;
  /**
   * Where the bundled system applications come from: the install root's `apps/` (CONTRACT §2), never
   * SVC_HOME. SVC_SYSTEM_APPS_DIR names another folder (tests run only the system apps they need).
   */
  systemAppsDir: string;
  listenAddress: string;
  restPort: number;
  tcpPort: number;
  agentPort: number;
  metricsPort: number | undefined;
  hostName: string;
  authMode: 'builtin' | 'external';
  oidcIssuer: string;
  oidcAudience: string;
  issuerPort: number;
  passwordFlow: boolean;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  labels: Record<string, string>;
  forwardTargets: string[];
  /** Extra CA file (PEM) trusted for forward targets, besides this daemon's own CA. */
  forwardCaFile: string | undefined;
  registryUrl: string | undefined;
  /** Cluster mode (SVC_REGISTRY_URL or Registry.Url set), read at start; undefined = stand-alone. */
  cluster: ClusterConfig | undefined;
  /** The Registry section besides `Url` (cluster mode; read at start). */
  registry: Omit<NonNullable<ConfigDocument['Registry']>, 'Url'>;
  /** BaseConfig.Description: free text shown in GET /svc/config. */
  description: string;
  /**
   * BaseConfig.DefaultExecUser: the OS user of principals without their own `execution_user`
   * (undefined = the daemon's user). Read at each spawn, so a POST takes effect for the next process.
   */
  defaultExecUser: string | undefined;
  /** BaseConfig.DisableExecUser: run everything as the daemon's user, ignoring execution users. */
  disableExecUser: boolean;
  /** BaseConfig.FileTransferRoots: allow-list of file transfers (files/file-policy.ts); empty = none. */
  fileTransferRoots: string[];
  /** BaseConfig.ScheduleIntervalSeconds: the health-check tick of the supervisor (read at start). */
  scheduleIntervalSeconds: number;
  /** BaseConfig.PosixTimezone: the daemon's TZ (schedules, daily windows); undefined = the host's. */
  timezone: string | undefined;
  tls: { certFile: string; keyFile: string; caFile: string | undefined } | undefined;
  limits: Limits;
  stopGraceMs: number;
  /** Cap of one captured output file on disk (`BaseConfig.OutputMaxBytes`, SVC_OUTPUT_MAX_BYTES). */
  outputMaxBytes: number;
  /** SVC_SPAWNER: how processes are spawned (supervisor/spawner/launch.ts); default `auto`. */
  spawner: 'native' | 'inprocess' | 'auto';
}

export const DEFAULT_LIMITS: Limits = {
  maxBodyBytes: 16 * 1024 * 1024,
  maxFrameBytes: 256 * 1024 * 1024,
  maxConnections: 4096,
  maxConnectionsPerIp: 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 120_000,
  idleTimeoutMs: 120_000,
  logMaxBytes: 16 * 1024 * 1024,
  mcpMaxSessions: 256,
  mcpMaxSessionsPerPrincipal: 16,
  mcpSessionIdleMs: 5 * 60_000,
  handshakeTimeoutMs: 5_000,
  maxInflightBytesPerConnection: 64 * 1024 * 1024,
  maxInflightBytesPerPrincipal: 128 * 1024 * 1024,
  maxInflightBytesPerAddress: 16 * 1024 * 1024,
  maxInflightBytes: 512 * 1024 * 1024,
};

export class ConfigError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ConfigError';
  }
}

export async function readConfigFile(file: string): Promise<ConfigFile> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new ConfigError(`cannot read ${file}: ${(cause as Error).message}`, { cause });
  }
  let raw: unknown;
  try {
    raw = parseYaml(text, { maxAliasCount: 100 }) ?? {};
  } catch (cause) {
    throw new ConfigError(`${file}: not valid YAML: ${(cause as Error).message}`, { cause });
  }
  try {
    return parseConfigFileDocument(raw);
  } catch (cause) {
    if (cause instanceof ConfigDocumentError) throw new ConfigError(`${file}: ${cause.message}`, { cause });
    throw cause;
  }
}

/** Default of BaseConfig.ScheduleIntervalSeconds (the supervisor's health-check tick). */
export const DEFAULT_SCHEDULE_INTERVAL_SECONDS = 10;

function tlsOf(home: string, ssl: NonNullable<ConfigDocument['REST']>['SSL']): DaemonConfig['tls'] {
  if (ssl == null) return undefined;
  if (ssl.CertFile === undefined || ssl.KeyFile === undefined)
    throw new ConfigError('REST.SSL: CertFile and KeyFile are both required');
  return {
    certFile: resolve(home, ssl.CertFile),
    keyFile: resolve(home, ssl.KeyFile),
    caFile: ssl.CaFile === undefined ? undefined : resolve(home, ssl.CaFile),
  };
}

function envPort(env: NodeJS.ProcessEnv, key: string): number | undefined {
  const value = env[key];
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new ConfigError(`${key}: not a port number: ${value}`);
  return n;
}

/** SVC_OUTPUT_MAX_BYTES wins over `BaseConfig.OutputMaxBytes`; 16 MiB by default, at least 64 KiB. */
function outputMaxBytes(fromEnv: string | undefined, fromFile: number | undefined): number {
  if (fromEnv === undefined || fromEnv === '') return fromFile ?? 16 * 1024 * 1024;
  const value = Number(fromEnv);
  if (!/^\d+$/.test(fromEnv) || !Number.isSafeInteger(value) || value < 64 * 1024 || value > 2 ** 40)
    throw new ConfigError(`SVC_OUTPUT_MAX_BYTES: expected bytes from 65536 to 2^40, got ${fromEnv}`);
  return value;
}

function envFlag(env: NodeJS.ProcessEnv, key: string): boolean | undefined {
  const value = env[key]?.toLowerCase();
  if (value === undefined || value === '') return undefined;
  if (['1', 'true', 'on', 'yes'].includes(value)) return true;
  if (['0', 'false', 'off', 'no'].includes(value)) return false;
  throw new ConfigError(`${key}: expected on/off or true/false, got ${value}`);
}

export async function loadConfig(env: NodeJS.ProcessEnv = process.env): Promise<DaemonConfig> {
  const home = resolve(env['SVC_HOME'] ?? INSTALL_ROOT);
  const workDir = join(home, 'work');
  // Defaults of the install root, overlaid by the home's optional config/config.yaml (CONTRACT §3).
  const installDefaults =
    home === INSTALL_ROOT ? {} : await readConfigFile(join(INSTALL_ROOT, 'config', 'config.yaml'));
  const homeBase = await readConfigFile(join(home, 'config', 'config.yaml'));
  const base = mergeConfigDocuments(installDefaults, homeBase);
  const overrides = await readConfigFile(join(workDir, 'config', 'config.yaml'));
  const doc = mergeConfigDocuments(base, overrides);
  const b = doc.BaseConfig ?? {};
  const r = doc.REST ?? {};
  const a = doc.Auth ?? {};
  const fileLimits = r.Limits ?? {};

  const authModeEnv = env['SVC_AUTH_MODE'];
  if (
    authModeEnv !== undefined &&
    authModeEnv !== '' &&
    authModeEnv !== 'builtin' &&
    authModeEnv !== 'external'
  )
    throw new ConfigError(`SVC_AUTH_MODE: expected builtin or external, got ${authModeEnv}`);
  const authMode = (authModeEnv || a.Mode) ?? 'builtin';
  const issuerPort = envPort(env, 'SVC_ISSUER_PORT') ?? a.IssuerPort ?? 6062;
  const issuerEnv = env['SVC_OIDC_ISSUER'];
  if (issuerEnv !== undefined && issuerEnv !== '' && !URL.canParse(issuerEnv))
    throw new ConfigError(`SVC_OIDC_ISSUER: not a URL`);
  const oidcIssuer = (issuerEnv || a.Issuer) ?? `http://127.0.0.1:${issuerPort}/auth`;
  if (authMode === 'external' && !issuerEnv && a.Issuer === undefined)
    throw new ConfigError('external auth mode needs SVC_OIDC_ISSUER (or Auth.Issuer in config.yaml)');

  // The headers are part of the request: their timeout cannot be longer than the request's (Node
  // refuses such a server). The default follows a shorter request timeout; explicit values must agree.
  const requestTimeoutMs = fileLimits.RequestTimeoutMs ?? DEFAULT_LIMITS.requestTimeoutMs;
  const headersTimeoutMs =
    fileLimits.HeadersTimeoutMs ?? Math.min(DEFAULT_LIMITS.headersTimeoutMs, requestTimeoutMs);
  if (headersTimeoutMs > requestTimeoutMs)
    throw new ConfigError(
      `limits.headers_timeout_ms (${headersTimeoutMs}) must not exceed limits.request_timeout_ms (${requestTimeoutMs}) (REST.Limits.HeadersTimeoutMs, REST.Limits.RequestTimeoutMs)`,
    );
  const limits: Limits = {
    maxBodyBytes: fileLimits.MaxBodyBytes ?? DEFAULT_LIMITS.maxBodyBytes,
    maxFrameBytes: fileLimits.MaxFrameBytes ?? DEFAULT_LIMITS.maxFrameBytes,
    maxConnections: fileLimits.MaxConnections ?? DEFAULT_LIMITS.maxConnections,
    maxConnectionsPerIp: fileLimits.MaxConnectionsPerIp ?? DEFAULT_LIMITS.maxConnectionsPerIp,
    headersTimeoutMs,
    requestTimeoutMs,
    idleTimeoutMs: fileLimits.IdleTimeoutMs ?? DEFAULT_LIMITS.idleTimeoutMs,
    logMaxBytes: fileLimits.LogMaxBytes ?? DEFAULT_LIMITS.logMaxBytes,
    mcpMaxSessions: fileLimits.McpMaxSessions ?? DEFAULT_LIMITS.mcpMaxSessions,
    mcpMaxSessionsPerPrincipal:
      fileLimits.McpMaxSessionsPerPrincipal ?? DEFAULT_LIMITS.mcpMaxSessionsPerPrincipal,
    mcpSessionIdleMs: fileLimits.McpSessionIdleMs ?? DEFAULT_LIMITS.mcpSessionIdleMs,
    handshakeTimeoutMs: fileLimits.HandshakeTimeoutMs ?? DEFAULT_LIMITS.handshakeTimeoutMs,
    maxInflightBytesPerConnection:
      fileLimits.MaxInflightBytesPerConnection ?? DEFAULT_LIMITS.maxInflightBytesPerConnection,
    maxInflightBytesPerPrincipal:
      fileLimits.MaxInflightBytesPerPrincipal ?? DEFAULT_LIMITS.maxInflightBytesPerPrincipal,
    maxInflightBytesPerAddress: fileLimits.MaxInflightBytesPerAddress ?? DEFAULT_LIMITS.maxInflightBytesPerAddress,
    maxInflightBytes: fileLimits.MaxInflightBytes ?? DEFAULT_LIMITS.maxInflightBytes,
  };

  const forwardEnv = env['SVC_FORWARD_TARGETS'];
  const metricsPort = envPort(env, 'SVC_METRICS_PORT') ?? r.MetricsPort ?? undefined;
  const { Url: registryFileUrl, ...registry } = doc.Registry ?? {};
  const cluster = clusterConfigOf(home, doc.Registry ?? {}, env, (message) => new ConfigError(message));
  const registryUrl = cluster === undefined ? (registryFileUrl ?? undefined) : cluster.urls.join(',');
  const hostName = (env['SVC_HOST_NAME'] || b.HostName) ?? hostname();
  if (cluster !== undefined && !/^[A-Za-z0-9_.-]{1,253}$/.test(hostName))
    throw new ConfigError(
      'host name: cluster mode needs letters, digits, "_", "." or "-" only (it names registry keys); set SVC_HOST_NAME',
    );
  const systemAppsEnv = env['SVC_SYSTEM_APPS_DIR'];
  return {
    home,
    workDir,
    systemAppsDir: systemAppsEnv ? resolve(systemAppsEnv) : join(INSTALL_ROOT, 'apps'),
    listenAddress: (env['SVC_LISTEN_ADDRESS'] || r.ListenAddress) ?? '127.0.0.1',
    restPort: envPort(env, 'SVC_REST_PORT') ?? r.RestPort ?? 6058,
    tcpPort: envPort(env, 'SVC_TCP_PORT') ?? r.TcpPort ?? 6059,
    agentPort: envPort(env, 'SVC_AGENT_PORT') ?? r.AgentPort ?? 6060,
    metricsPort,
    hostName,
    authMode,
    oidcIssuer: oidcIssuer.replace(/\/+$/, ''),
    oidcAudience: (env['SVC_OIDC_AUDIENCE'] || a.Audience) ?? 'svc-api',
    issuerPort,
    passwordFlow: authMode === 'builtin' && (envFlag(env, 'SVC_AUTH_PASSWORD_FLOW') ?? true),
    logLevel: (b.LogLevel?.toLowerCase() as DaemonConfig['logLevel'] | undefined) ?? 'info',
    labels: doc.Labels ?? {},
    forwardTargets:
      forwardEnv !== undefined && forwardEnv !== ''
        ? forwardEnv
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean)
        : (r.ForwardTargets ?? []),
    forwardCaFile: ((f) => (f ? resolve(home, f) : undefined))(env['SVC_FORWARD_CA_FILE'] || r.ForwardCaFile),
    registryUrl: registryUrl || undefined,
    registry,
    cluster,
    description: b.Description ?? '',
    defaultExecUser: b.DefaultExecUser || undefined,
    disableExecUser: b.DisableExecUser ?? false,
    fileTransferRoots: b.FileTransferRoots ?? [],
    scheduleIntervalSeconds: b.ScheduleIntervalSeconds ?? DEFAULT_SCHEDULE_INTERVAL_SECONDS,
    timezone: b.PosixTimezone || undefined,
    tls: tlsOf(home, r.SSL),
    limits,
    stopGraceMs: (b.StopGraceSeconds ?? 5) * 1000,
    outputMaxBytes: outputMaxBytes(env['SVC_OUTPUT_MAX_BYTES'], b.OutputMaxBytes),
    spawner: spawnerOf(env['SVC_SPAWNER']),
  };
}

/** SVC_SPAWNER: native (svc-spawner or no start), inprocess, or auto (the spawner where it builds). */
function spawnerOf(value: string | undefined): 'native' | 'inprocess' | 'auto' {
  if (value === undefined || value === '' || value === 'auto') return 'auto';
  if (value === 'native' || value === 'inprocess') return value;
  throw new ConfigError(
    `SVC_SPAWNER: expected native, inprocess or auto, got ${JSON.stringify(value.slice(0, 40))}`,
  );
}
