// The configuration document: App Mesh 3.0's sectioned form (CONTRACT §3), the shape of
// config/config.yaml, of its overlays and of the GET/POST /svc/config bodies:
//
//   BaseConfig: { Description, LogLevel, DefaultExecUser, DisableExecUser, ScheduleIntervalSeconds,
//                 PosixTimezone, StopGraceSeconds, HostName, OutputMaxBytes }
//   REST:       { ListenAddress, RestPort, TcpPort, AgentPort, MetricsPort, ForwardTargets,
//                 ForwardCaFile, SSL: {CertFile, KeyFile, CaFile}, Limits: {…} }
//   Auth:       { Mode, Issuer, Audience, IssuerPort }
//   Registry:   { IsMainNode, IsWorkerNode, Url, SessionTTL, EnableRegistrySecurity, SvcProxyUrl,
//                 SSL: {CertFile, KeyFile, CaFile} }
//   Labels:     { <key>: <value> }
//
// Files of the earlier flat shape (`log_level`, `rest_port`, `limits: {max_body_bytes}` …) are
// still read: they are validated as before and translated (`fromFlat`); svcd writes only the
// sectioned form. Pure: no I/O.
import { z } from 'zod';

const port = z.number().int().min(0).max(65535);
const LABEL_KEY = /^[A-Za-z0-9_.-]{1,128}$/;
/** A POSIX user name (useradd's default rule, a trailing `$` allowed for machine accounts). */
const USER_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?$/;

export const LOG_LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR'] as const;
export type ConfigLogLevel = (typeof LOG_LEVELS)[number];

/** Upper-cases a known level (`debug` and `DEBUG` are the same); anything else fails. */
const logLevel = z
  .string()
  .transform((value) => value.toUpperCase())
  .pipe(z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(', ')}` }));

function isTimeZone(value: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

const timeZone = z
  .string()
  .max(64)
  .refine(isTimeZone, { error: 'not a time zone name (IANA, e.g. UTC or Europe/Berlin)' });

const tlsFiles = z
  .object({
    CertFile: z.string().min(1).max(4096),
    KeyFile: z.string().min(1).max(4096),
    CaFile: z.string().max(4096),
  })
  .partial()
  .strict();

export const limitsSchema = z
  .object({
    MaxBodyBytes: z.number().int().min(1024),
    MaxFrameBytes: z
      .number()
      .int()
      .min(1024)
      .max(256 * 1024 * 1024),
    MaxConnections: z.number().int().min(1),
    MaxConnectionsPerIp: z.number().int().min(1),
    HeadersTimeoutMs: z.number().int().min(100),
    RequestTimeoutMs: z.number().int().min(100),
    IdleTimeoutMs: z.number().int().min(100),
    /** Size at which server.log is rotated. */
    LogMaxBytes: z
      .number()
      .int()
      .min(64 * 1024),
    /** MCP sessions (the agent's /mcp) in all, per principal, and the idle time that closes one. */
    McpMaxSessions: z.number().int().min(1).max(100_000),
    McpMaxSessionsPerPrincipal: z.number().int().min(1).max(10_000),
    McpSessionIdleMs: z
      .number()
      .int()
      .min(1000)
      .max(24 * 3600_000),
    /** From accept to the first request (TLS handshake included); silent connections are closed. */
    HandshakeTimeoutMs: z.number().int().min(100),
    /** Request bodies one TCP/WSS connection may have in flight (received or being handled). */
    MaxInflightBytesPerConnection: z.number().int().min(64 * 1024),
    /** Request bodies one principal (or one application's process key) may have in flight. */
    MaxInflightBytesPerPrincipal: z.number().int().min(64 * 1024),
    /** Request bodies without a principal (before authentication) one address may have in flight. */
    MaxInflightBytesPerAddress: z.number().int().min(64 * 1024),
    /** Request bodies in flight in all. */
    MaxInflightBytes: z.number().int().min(64 * 1024),
  })
  .partial()
  .strict();

export const configSchema = z
  .object({
    BaseConfig: z
      .object({
        Description: z.string().max(1024),
        LogLevel: logLevel,
        DefaultExecUser: z.string().regex(USER_NAME, { error: 'not a user name' }).or(z.literal('')),
        DisableExecUser: z.boolean(),
        /** Directories /svc/file/upload and /download may reach (absolute; empty = no allow-list). */
        FileTransferRoots: z
          .array(z.string().max(4096).regex(/^\//, { error: 'not an absolute path' }))
          .max(256),
        ScheduleIntervalSeconds: z.number().int().min(1).max(3600),
        PosixTimezone: timeZone.or(z.literal('')),
        StopGraceSeconds: z.number().min(0).max(3600),
        HostName: z.string().min(1).max(253),
        /** Cap of one captured output file on disk, bytes. */
        OutputMaxBytes: z
          .number()
          .int()
          .min(64 * 1024)
          .max(2 ** 40),
      })
      .partial()
      .strict(),
    REST: z
      .object({
        ListenAddress: z.string().min(1).max(255),
        RestPort: port,
        TcpPort: port,
        AgentPort: port,
        MetricsPort: port.nullable(),
        ForwardTargets: z.array(z.string().min(1).max(261)).max(1000),
        ForwardCaFile: z.string().max(4096).nullable(),
        SSL: tlsFiles.nullable(),
        Limits: limitsSchema,
      })
      .partial()
      .strict(),
    Auth: z
      .object({
        Mode: z.enum(['builtin', 'external']),
        Issuer: z.string().url(),
        Audience: z.string().min(1).max(255),
        IssuerPort: port,
      })
      .partial()
      .strict(),
    Registry: z
      .object({
        IsMainNode: z.boolean(),
        IsWorkerNode: z.boolean(),
        Url: z.string().max(4096).nullable(),
        SessionTTL: z.number().int().min(1).max(86_400),
        EnableRegistrySecurity: z.boolean(),
        SvcProxyUrl: z.string().max(4096).nullable(),
        SSL: tlsFiles.nullable(),
      })
      .partial()
      .strict(),
    Labels: z.record(z.string().regex(LABEL_KEY), z.string().max(1024)),
  })
  .partial()
  .strict();

/** One configuration document (a file, an overlay, or a POST body): every key optional. */
export type ConfigDocument = z.infer<typeof configSchema>;

/** The earlier flat shape, read from files only. */
const flatSchema = z
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
    labels: z.record(z.string().regex(LABEL_KEY), z.string().max(1024)),
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
        handshake_timeout_ms: z.number().int().min(100),
        max_inflight_bytes_per_connection: z.number().int().min(64 * 1024),
        max_inflight_bytes_per_principal: z.number().int().min(64 * 1024),
        max_inflight_bytes_per_address: z.number().int().min(64 * 1024),
        max_inflight_bytes: z.number().int().min(64 * 1024),
      })
      .partial()
      .strict(),
    stop_grace_seconds: z.number().min(0).max(3600),
    output_max_bytes: z
      .number()
      .int()
      .min(64 * 1024)
      .max(2 ** 40),
  })
  .partial()
  .strict();

type FlatDocument = z.infer<typeof flatSchema>;

const SECTIONS = new Set(['BaseConfig', 'REST', 'Auth', 'Registry', 'Labels']);

/** Drops undefined members so that a translated section holds only what the file set. */
function defined<T extends Record<string, unknown>>(record: T): Partial<T> {
  return Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function nonEmpty<T extends Record<string, unknown>>(record: T): T | undefined {
  return Object.keys(record).length === 0 ? undefined : record;
}

/** The sectioned equivalent of a flat document. */
export function fromFlat(flat: FlatDocument): ConfigDocument {
  const l = flat.limits;
  const limits =
    l === undefined
      ? undefined
      : defined({
          MaxBodyBytes: l.max_body_bytes,
          MaxFrameBytes: l.max_frame_bytes,
          MaxConnections: l.max_connections,
          MaxConnectionsPerIp: l.max_connections_per_ip,
          HeadersTimeoutMs: l.headers_timeout_ms,
          RequestTimeoutMs: l.request_timeout_ms,
          IdleTimeoutMs: l.idle_timeout_ms,
          LogMaxBytes: l.log_max_bytes,
          HandshakeTimeoutMs: l.handshake_timeout_ms,
          MaxInflightBytesPerConnection: l.max_inflight_bytes_per_connection,
          MaxInflightBytesPerPrincipal: l.max_inflight_bytes_per_principal,
          MaxInflightBytesPerAddress: l.max_inflight_bytes_per_address,
          MaxInflightBytes: l.max_inflight_bytes,
        });
  const ssl =
    flat.tls === undefined
      ? undefined
      : flat.tls === null
        ? null
        : defined({ CertFile: flat.tls.cert_file, KeyFile: flat.tls.key_file, CaFile: flat.tls.ca_file });
  const document: ConfigDocument = defined({
    BaseConfig: nonEmpty(
      defined({
        LogLevel: flat.log_level?.toUpperCase() as ConfigLogLevel | undefined,
        StopGraceSeconds: flat.stop_grace_seconds,
        HostName: flat.host_name,
        OutputMaxBytes: flat.output_max_bytes,
      }),
    ),
    REST: nonEmpty(
      defined({
        ListenAddress: flat.listen_address,
        RestPort: flat.rest_port,
        TcpPort: flat.tcp_port,
        AgentPort: flat.agent_port,
        MetricsPort: flat.metrics_port,
        ForwardTargets: flat.forward_targets,
        ForwardCaFile: flat.forward_ca_file,
        SSL: ssl,
        Limits: limits,
      }),
    ),
    Auth: nonEmpty(
      defined({
        Mode: flat.auth_mode,
        Issuer: flat.oidc_issuer,
        Audience: flat.oidc_audience,
        IssuerPort: flat.issuer_port,
      }),
    ),
    Registry: flat.registry_url === undefined ? undefined : { Url: flat.registry_url },
    Labels: flat.labels,
  });
  return document;
}

/** A validation failure: `path` is dotted (`REST.Limits.MaxBodyBytes`), `problem` human text. */
export class ConfigDocumentError extends Error {
  readonly path: string;
  readonly problem: string;
  constructor(path: string, problem: string) {
    super(`${path}: ${problem}`);
    this.name = 'ConfigDocumentError';
    this.path = path;
    this.problem = problem;
  }
}

function firstIssue(error: z.ZodError): ConfigDocumentError {
  return issueError(error.issues[0]!);
}

function issueError(issue: z.core.$ZodIssue): ConfigDocumentError {
  const keys = issue.code === 'unrecognized_keys' ? ` (${issue.keys.join(', ')})` : '';
  return new ConfigDocumentError(issue.path.join('.') || '(root)', issue.message + keys);
}

/**
 * A POST /svc/config body, and what the host config store validates a change with: a sectioned
 * document (configSchema); a body that is no object, or of the flat shape of files, is refused as a
 * whole.
 */
export const configUpdateSchema = z.preprocess((raw, context) => {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    context.addIssue({ code: 'custom', message: 'configuration must be a JSON object of sections' });
  else if (isFlatDocument(raw as Record<string, unknown>))
    context.addIssue({
      code: 'custom',
      message:
        'the flat configuration shape is not accepted; send sections, e.g. {"BaseConfig": {"LogLevel": "DEBUG"}} (BaseConfig, REST, Auth, Registry, Labels)',
    });
  return raw;
}, configSchema);

/** The refusal of a change: its first problem, "<dotted path>: <problem>" (at most 512 characters). */
export function configProblem(issues: readonly z.core.$ZodIssue[]): string {
  const issue = issues[0];
  if (issue === undefined) return 'invalid configuration';
  if (issue.code === 'custom' && issue.path.length === 0) return issue.message; // the body as a whole
  const { path, problem } = issueError(issue);
  return `${path}: ${problem}`.slice(0, 512);
}

/** True when the document uses the earlier flat keys (every top-level key lower-case). */
export function isFlatDocument(raw: Record<string, unknown>): boolean {
  const keys = Object.keys(raw);
  return keys.length > 0 && keys.every((key) => !SECTIONS.has(key) && /^[a-z]/.test(key));
}

/**
 * Validates a document of a file: sectioned, or flat (then translated). Throws ConfigDocumentError.
 */
export function parseConfigFileDocument(raw: unknown): ConfigDocument {
  if (raw === null || raw === undefined) return {};
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw new ConfigDocumentError(
      '(root)',
      'must be a map of sections (BaseConfig, REST, Auth, Registry, Labels)',
    );
  if (isFlatDocument(raw as Record<string, unknown>)) {
    const flat = flatSchema.safeParse(raw);
    if (!flat.success) throw firstIssue(flat.error);
    return fromFlat(flat.data);
  }
  return parseConfigDocument(raw);
}

/** Validates a sectioned document (a POST body or a file). Throws ConfigDocumentError. */
export function parseConfigDocument(raw: unknown): ConfigDocument {
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) throw firstIssue(parsed.error);
  return parsed.data;
}

/**
 * `overlay` merged over `base`, section by section (and REST.Limits key by key). A `null` SSL
 * replaces; an overlay's Labels replace the base's whole (so that a deleted label stays deleted).
 */
export function mergeConfigDocuments(base: ConfigDocument, overlay: ConfigDocument): ConfigDocument {
  const merged: ConfigDocument = { ...base };
  if (overlay.BaseConfig !== undefined) merged.BaseConfig = { ...base.BaseConfig, ...overlay.BaseConfig };
  if (overlay.REST !== undefined) {
    merged.REST = { ...base.REST, ...overlay.REST };
    if (overlay.REST.Limits !== undefined)
      merged.REST.Limits = { ...base.REST?.Limits, ...overlay.REST.Limits };
  }
  if (overlay.Auth !== undefined) merged.Auth = { ...base.Auth, ...overlay.Auth };
  if (overlay.Registry !== undefined) merged.Registry = { ...base.Registry, ...overlay.Registry };
  if (overlay.Labels !== undefined) merged.Labels = { ...overlay.Labels };
  return merged;
}

/** Dotted paths of every leaf key a document sets (`BaseConfig.LogLevel`, `Labels`, …). */
export function keysOf(document: ConfigDocument): string[] {
  const keys: string[] = [];
  for (const [section, value] of Object.entries(document)) {
    if (section === 'Labels' || value === null || typeof value !== 'object') {
      keys.push(section);
      continue;
    }
    for (const [key, inner] of Object.entries(value as Record<string, unknown>)) {
      if (key === 'Limits' && inner !== null && typeof inner === 'object')
        for (const limit of Object.keys(inner)) keys.push(`${section}.Limits.${limit}`);
      else keys.push(`${section}.${key}`);
    }
  }
  return keys;
}
