// Writable host settings: labels and the few configuration keys that may change at run time.
// Persisted as work/config/config.yaml (the overrides layer of config.ts), written atomically.
import { join } from 'node:path';
import { stringify } from 'yaml';
import { z } from 'zod';
import { SvcError } from '@svc/protocol';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { readConfigFile, type ConfigFile, type DaemonConfig } from './config.ts';

const LABEL_KEY = /^[A-Za-z0-9_.-]{1,128}$/;

/** Keys accepted by POST /svc/config. Listener, TLS and auth settings need a restart and local access. */
const writableSchema = z
  .object({
    log_level: z.enum(['debug', 'info', 'warn', 'error']),
    stop_grace_seconds: z.number().min(0).max(3600),
    forward_targets: z.array(z.string().min(1).max(261)).max(1000),
    labels: z.record(z.string().regex(LABEL_KEY), z.string().max(1024)),
  })
  .partial()
  .strict();

export type WritableConfig = z.infer<typeof writableSchema>;

export class HostConfigStore {
  readonly #file: string;
  readonly #config: DaemonConfig;
  #overrides: ConfigFile;
  #writing: Promise<void> = Promise.resolve();

  private constructor(file: string, config: DaemonConfig, overrides: ConfigFile) {
    this.#file = file;
    this.#config = config;
    this.#overrides = overrides;
  }

  static async open(config: DaemonConfig): Promise<HostConfigStore> {
    const file = join(config.workDir, 'config', 'config.yaml');
    return new HostConfigStore(file, config, await readConfigFile(file));
  }

  get labels(): Readonly<Record<string, string>> {
    return this.#config.labels;
  }

  /** The effective configuration as the API shows it (no secrets live in it). */
  view(): Record<string, unknown> {
    const c = this.#config;
    return {
      host_name: c.hostName,
      listen_address: c.listenAddress,
      rest_port: c.restPort,
      tcp_port: c.tcpPort,
      agent_port: c.agentPort,
      metrics_port: c.metricsPort ?? null,
      auth_mode: c.authMode,
      oidc_issuer: c.oidcIssuer,
      oidc_audience: c.oidcAudience,
      log_level: c.logLevel,
      stop_grace_seconds: c.stopGraceMs / 1000,
      forward_targets: c.forwardTargets,
      forward_ca_file: c.forwardCaFile ?? null,
      labels: c.labels,
      cluster: c.registryUrl !== undefined,
      limits: {
        max_body_bytes: c.limits.maxBodyBytes,
        max_frame_bytes: c.limits.maxFrameBytes,
        max_connections: c.limits.maxConnections,
        max_connections_per_ip: c.limits.maxConnectionsPerIp,
      },
    };
  }

  async update(input: unknown): Promise<Record<string, unknown>> {
    if (typeof input !== 'object' || input === null || Array.isArray(input))
      throw new SvcError('bad_request', 'configuration must be a JSON object');
    const parsed = writableSchema.safeParse(input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const where = issue.path.join('.') || '(root)';
      throw new SvcError(
        'bad_request',
        `${where}: ${issue.message} (writable keys: log_level, stop_grace_seconds, forward_targets, labels)`,
      );
    }
    const change = parsed.data;
    const next: ConfigFile = { ...this.#overrides };
    if (change.log_level !== undefined) {
      next.log_level = change.log_level;
      this.#config.logLevel = change.log_level;
    }
    if (change.stop_grace_seconds !== undefined) {
      next.stop_grace_seconds = change.stop_grace_seconds;
      this.#config.stopGraceMs = change.stop_grace_seconds * 1000;
    }
    if (change.forward_targets !== undefined) {
      next.forward_targets = change.forward_targets;
      this.#config.forwardTargets = change.forward_targets;
    }
    if (change.labels !== undefined) {
      const labels = { ...this.#config.labels, ...change.labels };
      next.labels = labels;
      this.#config.labels = labels;
    }
    await this.#persist(next);
    return this.view();
  }

  async setLabel(key: string, value: string): Promise<Record<string, string>> {
    if (value.length > 1024) throw new SvcError('invalid_query', 'label value exceeds 1024 characters');
    const labels = { ...this.#config.labels, [key]: value };
    this.#config.labels = labels;
    await this.#persist({ ...this.#overrides, labels });
    return labels;
  }

  async deleteLabel(key: string): Promise<Record<string, string>> {
    if (!Object.hasOwn(this.#config.labels, key)) throw new SvcError('not_found', `no label ${key}`);
    const labels = { ...this.#config.labels };
    delete labels[key];
    this.#config.labels = labels;
    await this.#persist({ ...this.#overrides, labels });
    return labels;
  }

  #persist(next: ConfigFile): Promise<void> {
    this.#overrides = next;
    const text = stringify(next);
    this.#writing = this.#writing.then(() => writeFileAtomic(this.#file, text, 0o600));
    return this.#writing;
  }
}
