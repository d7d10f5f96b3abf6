// GET/POST /svc/config and the labels: the sectioned configuration document (config-schema.ts) as
// the daemon runs with it, and the writable overrides layer work/config/config.yaml (written
// atomically, always in the sectioned form).
//
// POST merges a partial document. Every key it accepts is persisted and either takes effect at
// once (LIVE_KEYS) or is listed in the answer's `restart_required` (keys whose value differs from
// the running one and that are read only at start: listeners, TLS, limits, auth, registry, …).
// Unknown keys and bad values are 400 and change nothing; the earlier flat shape is refused.
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { stringify } from 'yaml';
import { SvcError } from '@svc/protocol';
import type { LogLevel } from '../log/logger.ts';
import { writeFileAtomic } from '@svc/platform/atomic-file';
import {
  clusterConfigOf,
  configProblem,
  configUpdateSchema,
  keysOf,
  mergeConfigDocuments,
  readConfigFile,
  type ConfigDocument,
  type ConfigLogLevel,
  type DaemonConfig,
} from '@svc/platform/config';

/** Keys of a POST that take effect at once; every other accepted key needs a restart. */
export const LIVE_KEYS: ReadonlySet<string> = new Set([
  'BaseConfig.Description',
  'BaseConfig.LogLevel',
  // Read by the process spawner at each start of a process (execution users).
  'BaseConfig.DefaultExecUser',
  'BaseConfig.DisableExecUser',
  // Read by /svc/file/* at each request.
  'BaseConfig.FileTransferRoots',
  // process.env.TZ: Node re-reads it, so the next schedule computation uses the new zone.
  'BaseConfig.PosixTimezone',
  'REST.ForwardTargets',
  'Labels',
]);

const MAX_LABELS = 1024;

export interface HostConfigEffects {
  /** Changes the daemon's log level at once (the root logger's setLevel). */
  setLogLevel(level: LogLevel): void;
}

/** The answer of POST /svc/config: the whole document and the accepted keys needing a restart. */
export type ConfigUpdateResult = ConfigDocument & { restart_required: string[] };

function valueAt(document: ConfigDocument, path: string): unknown {
  let value: unknown = document;
  for (const key of path.split('.')) value = (value as Record<string, unknown> | undefined)?.[key];
  return value;
}

/** Applies the BaseConfig.PosixTimezone value to this process ('' = the host's zone). */
export function applyTimezone(zone: string | undefined): void {
  if (zone === undefined || zone === '') delete process.env['TZ'];
  else process.env['TZ'] = zone;
}

export class HostConfigStore {
  readonly #file: string;
  readonly #config: DaemonConfig;
  readonly #effects: HostConfigEffects;
  #overrides: ConfigDocument;
  #queue: Promise<unknown> = Promise.resolve();
  readonly #labelListeners = new Set<(labels: Readonly<Record<string, string>>) => void>();

  private constructor(
    file: string,
    config: DaemonConfig,
    overrides: ConfigDocument,
    effects: HostConfigEffects,
  ) {
    this.#file = file;
    this.#config = config;
    this.#overrides = overrides;
    this.#effects = effects;
  }

  static async open(
    config: DaemonConfig,
    effects: HostConfigEffects = { setLogLevel: () => undefined },
  ): Promise<HostConfigStore> {
    const file = join(config.workDir, 'config', 'config.yaml');
    return new HostConfigStore(file, config, await readConfigFile(file), effects);
  }

  get labels(): Readonly<Record<string, string>> {
    return this.#config.labels;
  }

  /** Called after the labels changed (PUT/DELETE /svc/label, POST /svc/config); returns the unsubscribe. */
  onLabels(listener: (labels: Readonly<Record<string, string>>) => void): () => void {
    this.#labelListeners.add(listener);
    return () => this.#labelListeners.delete(listener);
  }

  #labelsChanged(): void {
    for (const listener of this.#labelListeners) listener(this.#config.labels);
  }

  /** The configuration the daemon runs with, as the sectioned document (no secrets live in it). */
  view(): ConfigDocument {
    const c = this.#config;
    return {
      BaseConfig: {
        Description: c.description,
        LogLevel: c.logLevel.toUpperCase() as ConfigLogLevel,
        DefaultExecUser: c.defaultExecUser ?? '',
        DisableExecUser: c.disableExecUser,
        FileTransferRoots: c.fileTransferRoots,
        ScheduleIntervalSeconds: c.scheduleIntervalSeconds,
        PosixTimezone: c.timezone ?? '',
        StopGraceSeconds: c.stopGraceMs / 1000,
        HostName: c.hostName,
        OutputMaxBytes: c.outputMaxBytes,
      },
      REST: {
        ListenAddress: c.listenAddress,
        RestPort: c.restPort,
        TcpPort: c.tcpPort,
        AgentPort: c.agentPort,
        MetricsPort: c.metricsPort ?? null,
        ForwardTargets: c.forwardTargets,
        ForwardCaFile: c.forwardCaFile ?? null,
        SSL:
          c.tls === undefined
            ? null
            : {
                CertFile: c.tls.certFile,
                KeyFile: c.tls.keyFile,
                ...(c.tls.caFile === undefined ? {} : { CaFile: c.tls.caFile }),
              },
        Limits: {
          MaxBodyBytes: c.limits.maxBodyBytes,
          MaxFrameBytes: c.limits.maxFrameBytes,
          MaxConnections: c.limits.maxConnections,
          MaxConnectionsPerIp: c.limits.maxConnectionsPerIp,
          HeadersTimeoutMs: c.limits.headersTimeoutMs,
          RequestTimeoutMs: c.limits.requestTimeoutMs,
          IdleTimeoutMs: c.limits.idleTimeoutMs,
          LogMaxBytes: c.limits.logMaxBytes,
          McpMaxSessions: c.limits.mcpMaxSessions,
          McpMaxSessionsPerPrincipal: c.limits.mcpMaxSessionsPerPrincipal,
          McpSessionIdleMs: c.limits.mcpSessionIdleMs,
          HandshakeTimeoutMs: c.limits.handshakeTimeoutMs,
          MaxInflightBytesPerConnection: c.limits.maxInflightBytesPerConnection,
          MaxInflightBytesPerPrincipal: c.limits.maxInflightBytesPerPrincipal,
          MaxInflightBytesPerAddress: c.limits.maxInflightBytesPerAddress,
          MaxInflightBytes: c.limits.maxInflightBytes,
        },
      },
      Auth: { Mode: c.authMode, Issuer: c.oidcIssuer, Audience: c.oidcAudience, IssuerPort: c.issuerPort },
      Registry: { ...c.registry, Url: c.registryUrl ?? null },
      Labels: c.labels,
    };
  }

  /** Validates, persists and applies a partial document; one change at a time. */
  update(input: unknown): Promise<ConfigUpdateResult> {
    return this.#serial(() => this.#update(input));
  }

  setLabel(key: string, value: string): Promise<Record<string, string>> {
    return this.#serial(async () => {
      if (value.length > 1024) throw new SvcError('invalid_query', 'label value exceeds 1024 characters');
      if (!Object.hasOwn(this.#config.labels, key) && Object.keys(this.#config.labels).length >= MAX_LABELS)
        throw new SvcError('bad_request', `at most ${MAX_LABELS} labels`);
      const labels = { ...this.#config.labels, [key]: value };
      await this.#persist({ ...this.#overrides, Labels: labels });
      this.#config.labels = labels;
      this.#labelsChanged();
      return labels;
    });
  }

  deleteLabel(key: string): Promise<Record<string, string>> {
    return this.#serial(async () => {
      if (!Object.hasOwn(this.#config.labels, key)) throw new SvcError('not_found', `no label ${key}`);
      const labels = { ...this.#config.labels };
      delete labels[key];
      await this.#persist({ ...this.#overrides, Labels: labels });
      this.#config.labels = labels;
      this.#labelsChanged();
      return labels;
    });
  }

  async #update(input: unknown): Promise<ConfigUpdateResult> {
    const parsed = configUpdateSchema.safeParse(input);
    if (!parsed.success) throw new SvcError('bad_request', configProblem(parsed.error.issues));
    let change: ConfigDocument = parsed.data;
    const before = this.view();
    if (change.Labels !== undefined) {
      change = { ...change, Labels: { ...this.#config.labels, ...change.Labels } };
      if (Object.keys(change.Labels!).length > MAX_LABELS)
        throw new SvcError('bad_request', `Labels: at most ${MAX_LABELS} labels`);
    }
    this.#checkConsistency(mergeConfigDocuments(before, change));

    const restartRequired = keysOf(change).filter(
      (key) =>
        !LIVE_KEYS.has(key) && JSON.stringify(valueAt(change, key)) !== JSON.stringify(valueAt(before, key)),
    );
    await this.#persist(mergeConfigDocuments(this.#overrides, change));
    this.#applyLive(change);
    return { ...this.view(), restart_required: restartRequired };
  }

  /** Refuses a change that would stop the next start (the same rules as config.ts). */
  #checkConsistency(next: ConfigDocument): void {
    const limits = next.REST?.Limits ?? {};
    if ((limits.HeadersTimeoutMs ?? 0) > (limits.RequestTimeoutMs ?? Infinity))
      throw new SvcError(
        'bad_request',
        'REST.Limits.HeadersTimeoutMs must not exceed REST.Limits.RequestTimeoutMs',
      );
    const ssl = next.REST?.SSL;
    if (ssl != null && (ssl.CertFile === undefined || ssl.KeyFile === undefined))
      throw new SvcError('bad_request', 'REST.SSL: CertFile and KeyFile are both required');
    if (next.Registry !== undefined)
      try {
        clusterConfigOf(
          this.#config.home,
          next.Registry,
          {},
          (message) => new SvcError('bad_request', message),
        );
      } catch (error) {
        if (error instanceof SvcError) throw error;
        throw new SvcError('bad_request', 'Registry: not a valid cluster configuration');
      }
    if (next.Auth?.Mode === 'external' && next.Auth.Issuer === undefined)
      throw new SvcError('bad_request', 'Auth: external mode needs Auth.Issuer');
  }

  #applyLive(change: ConfigDocument): void {
    const c = this.#config;
    const base = change.BaseConfig ?? {};
    if (base.Description !== undefined) c.description = base.Description;
    if (base.LogLevel !== undefined) {
      c.logLevel = base.LogLevel.toLowerCase() as LogLevel;
      this.#effects.setLogLevel(c.logLevel);
    }
    if (base.DefaultExecUser !== undefined) c.defaultExecUser = base.DefaultExecUser || undefined;
    if (base.DisableExecUser !== undefined) c.disableExecUser = base.DisableExecUser;
    if (base.FileTransferRoots !== undefined) c.fileTransferRoots = base.FileTransferRoots;
    if (base.PosixTimezone !== undefined) {
      c.timezone = base.PosixTimezone || undefined;
      applyTimezone(base.PosixTimezone);
    }
    if (change.REST?.ForwardTargets !== undefined) c.forwardTargets = change.REST.ForwardTargets;
    if (change.Labels !== undefined) {
      c.labels = change.Labels;
      this.#labelsChanged();
    }
  }

  /** Runs `change` after every change queued before it (read, validate, write, apply as one step). */
  #serial<T>(change: () => Promise<T>): Promise<T> {
    const step = this.#queue.then(change);
    this.#queue = step.catch(() => undefined);
    return step;
  }

  /** Writes the overrides atomically; the caller changes memory only after it succeeded. */
  async #persist(next: ConfigDocument): Promise<void> {
    const text =
      '# svc configuration overrides: written by svcd (POST /svc/config, labels); sectioned form.\n' +
      stringify(next);
    await mkdir(dirname(this.#file), { recursive: true, mode: 0o700 });
    await writeFileAtomic(this.#file, text, { mode: 0o600 });
    this.#overrides = next;
  }
}
