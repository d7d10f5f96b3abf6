// Effective configuration: config/config.yaml, overlaid by work/config/config.yaml, overlaid by
// environment variables (CONTRACT §3). Every value is validated; a bad file or variable stops the
// daemon with a message naming the source and the key.
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

/** Defined by the bundle build (build/build.js): the path from the bundle's directory to the root. */
declare const SVC_INSTALL_ROOT_FROM_MODULE: string | undefined;

/**
 * The repository root: from the bundle (packages/daemon/dist/svcd.mjs) the path the build defined,
 * from the sources (tests, tools) four levels above packages/daemon/src/config.
 */
export const INSTALL_ROOT = resolve(
  import.meta.dirname,
  typeof SVC_INSTALL_ROOT_FROM_MODULE === 'string' ? SVC_INSTALL_ROOT_FROM_MODULE : '../../../..',
);

const port = z.number().int().min(0).max(65535);

/** Keys an operator may set in config files (snake_case as on disk). */
const fileSchema = z
  .object({
    listen_address: z.string().min(1),
    rest_port: port,
    tcp_port: port,
    agent_port: port,
    metrics_port: port.nullable(),
    host_name: z.string().min(1).max(253),
    auth_mode: z.enum(['builtin', 'external']),
    oidc_issuer: z.string().url(),
    oidc_audience: z.string().min(1),
    issuer_port: port,
    log_level: z.enum(['debug', 'info', 'warn', 'error']),
    labels: z.record(z.string().regex(/^[A-Za-z0-9_.-]{1,128}$/), z.string().max(1024)),
    forward_targets: z.array(z.string()),
    forward_ca_file: z.string().nullable(),
    registry_url: z.string().nullable(),
    tls: z
      .object({ cert_file: z.string(), key_file: z.string(), ca_file: z.string().optional() })
      .strict()
      .nullable(),
    limits: z
      .object({
        max_body_bytes: z.number().int().min(1024),
        max_frame_bytes: z
          .number()
          .int()
          .min(1024)
          .max(256 * 1024 * 1024),
        max_connections: z.number().int().min(1),
        max_connections_per_ip: z.number().int().min(1),
        headers_timeout_ms: z.number().int().min(100),
        request_timeout_ms: z.number().int().min(100),
        idle_timeout_ms: z.number().int().min(100),
        log_max_bytes: z
          .number()
          .int()
          .min(64 * 1024),
      })
      .partial()
      .strict(),
    stop_grace_seconds: z.number().min(0).max(3600),
    /** BaseConfig.DefaultExecUser: OS user of principals without an execution_user. */
    default_exec_user: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_.-]{0,31}$/, 'must be an OS user name')
      .nullable(),
    /** BaseConfig.DisableExecUser: everything runs as the daemon's user (execution users ignored). */
    disable_exec_user: z.boolean(),
    /** Absolute directories that /svc/file/upload and /download may reach (empty = anywhere allowed). */
    file_transfer_roots: z.array(z.string().regex(/^\//, 'must be an absolute path')).max(256),
    output_max_bytes: z
      .number()
      .int()
      .min(64 * 1024)
      .max(2 ** 40),
  })
  .partial()
  .strict();

export type ConfigFile = z.infer<typeof fileSchema>;

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
  tls: { certFile: string; keyFile: string; caFile: string | undefined } | undefined;
  limits: Limits;
  stopGraceMs: number;
  /** BaseConfig.DefaultExecUser; read through execUserSettings (auth/execution-user.ts). */
  defaultExecUser: string | undefined;
  /** BaseConfig.DisableExecUser. */
  disableExecUser: boolean;
  /** Allow-list of file transfer directories (api/operations/files.ts); empty = no allow-list. */
  fileTransferRoots: string[];
  /** Cap of one captured output file on disk (`output_max_bytes`, SVC_OUTPUT_MAX_BYTES). */
  outputMaxBytes: number;
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
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`${file}: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  return parsed.data;
}

function envPort(env: NodeJS.ProcessEnv, key: string): number | undefined {
  const value = env[key];
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new ConfigError(`${key}: not a port number: ${value}`);
  return n;
}

/** SVC_OUTPUT_MAX_BYTES wins over `output_max_bytes`; 16 MiB by default, at least 64 KiB. */
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
  const base: ConfigFile = {
    ...installDefaults,
    ...homeBase,
    limits: { ...installDefaults.limits, ...homeBase.limits },
  };
  const overrides = await readConfigFile(join(workDir, 'config', 'config.yaml'));
  const file: ConfigFile = { ...base, ...overrides, limits: { ...base.limits, ...overrides.limits } };

  const authModeEnv = env['SVC_AUTH_MODE'];
  if (
    authModeEnv !== undefined &&
    authModeEnv !== '' &&
    authModeEnv !== 'builtin' &&
    authModeEnv !== 'external'
  )
    throw new ConfigError(`SVC_AUTH_MODE: expected builtin or external, got ${authModeEnv}`);
  const authMode = (authModeEnv || file.auth_mode) ?? 'builtin';
  const issuerPort = envPort(env, 'SVC_ISSUER_PORT') ?? file.issuer_port ?? 6062;
  const issuerEnv = env['SVC_OIDC_ISSUER'];
  if (issuerEnv !== undefined && issuerEnv !== '' && !URL.canParse(issuerEnv))
    throw new ConfigError(`SVC_OIDC_ISSUER: not a URL`);
  const oidcIssuer = (issuerEnv || file.oidc_issuer) ?? `http://127.0.0.1:${issuerPort}/auth`;
  if (authMode === 'external' && !issuerEnv && file.oidc_issuer === undefined)
    throw new ConfigError('external auth mode needs SVC_OIDC_ISSUER (or oidc_issuer in config.yaml)');

  // The headers are part of the request: their timeout cannot be longer than the request's (Node
  // refuses such a server). The default follows a shorter request timeout; explicit values must agree.
  const requestTimeoutMs = file.limits?.request_timeout_ms ?? DEFAULT_LIMITS.requestTimeoutMs;
  const headersTimeoutMs =
    file.limits?.headers_timeout_ms ?? Math.min(DEFAULT_LIMITS.headersTimeoutMs, requestTimeoutMs);
  if (headersTimeoutMs > requestTimeoutMs)
    throw new ConfigError(
      `limits.headers_timeout_ms (${headersTimeoutMs}) must not exceed limits.request_timeout_ms (${requestTimeoutMs})`,
    );
  const limits: Limits = {
    maxBodyBytes: file.limits?.max_body_bytes ?? DEFAULT_LIMITS.maxBodyBytes,
    maxFrameBytes: file.limits?.max_frame_bytes ?? DEFAULT_LIMITS.maxFrameBytes,
    maxConnections: file.limits?.max_connections ?? DEFAULT_LIMITS.maxConnections,
    maxConnectionsPerIp: file.limits?.max_connections_per_ip ?? DEFAULT_LIMITS.maxConnectionsPerIp,
    headersTimeoutMs,
    requestTimeoutMs,
    idleTimeoutMs: file.limits?.idle_timeout_ms ?? DEFAULT_LIMITS.idleTimeoutMs,
    logMaxBytes: file.limits?.log_max_bytes ?? DEFAULT_LIMITS.logMaxBytes,
  };

  const forwardEnv = env['SVC_FORWARD_TARGETS'];
  const metricsPort = envPort(env, 'SVC_METRICS_PORT') ?? file.metrics_port ?? undefined;
  const registryUrl = (env['SVC_REGISTRY_URL'] || file.registry_url) ?? undefined;
  if (registryUrl !== undefined)
    throw new ConfigError(
      `${env['SVC_REGISTRY_URL'] ? 'SVC_REGISTRY_URL' : 'registry_url in config.yaml'} is set, but cluster mode is not available in this version: unset it to run stand-alone`,
    );
  const systemAppsEnv = env['SVC_SYSTEM_APPS_DIR'];
  return {
    home,
    workDir,
    systemAppsDir: systemAppsEnv ? resolve(systemAppsEnv) : join(INSTALL_ROOT, 'apps'),
    listenAddress: (env['SVC_LISTEN_ADDRESS'] || file.listen_address) ?? '127.0.0.1',
    restPort: envPort(env, 'SVC_REST_PORT') ?? file.rest_port ?? 6058,
    tcpPort: envPort(env, 'SVC_TCP_PORT') ?? file.tcp_port ?? 6059,
    agentPort: envPort(env, 'SVC_AGENT_PORT') ?? file.agent_port ?? 6060,
    metricsPort,
    hostName: (env['SVC_HOST_NAME'] || file.host_name) ?? hostname(),
    authMode,
    oidcIssuer: oidcIssuer.replace(/\/+$/, ''),
    oidcAudience: (env['SVC_OIDC_AUDIENCE'] || file.oidc_audience) ?? 'svc-api',
    issuerPort,
    passwordFlow: authMode === 'builtin' && (envFlag(env, 'SVC_AUTH_PASSWORD_FLOW') ?? true),
    logLevel: file.log_level ?? 'info',
    labels: file.labels ?? {},
    forwardTargets:
      forwardEnv !== undefined && forwardEnv !== ''
        ? forwardEnv
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean)
        : (file.forward_targets ?? []),
    forwardCaFile: ((f) => (f ? resolve(home, f) : undefined))(
      env['SVC_FORWARD_CA_FILE'] || file.forward_ca_file,
    ),
    registryUrl,
    tls:
      file.tls == null
        ? undefined
        : {
            certFile: resolve(home, file.tls.cert_file),
            keyFile: resolve(home, file.tls.key_file),
            caFile: file.tls.ca_file === undefined ? undefined : resolve(home, file.tls.ca_file),
          },
    limits,
    stopGraceMs: (file.stop_grace_seconds ?? 5) * 1000,
    defaultExecUser: file.default_exec_user ?? undefined,
    disableExecUser: file.disable_exec_user ?? false,
    fileTransferRoots: file.file_transfer_roots ?? [],
    outputMaxBytes: outputMaxBytes(env['SVC_OUTPUT_MAX_BYTES'], file.output_max_bytes),
  };
}
