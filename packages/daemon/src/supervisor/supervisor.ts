// The supervisor: the API (SupervisorApi) over the registry of apps (registry.ts), and the wiring
// of every AppLifecycle to the real ports (process runner, output store, cgroups, health checks,
// snapshot) through the lifecycle hooks (hooks/), run in order by the hook runner.
//
// Hot path (register -> running): validate, issue the durable write, spawn, await the write
// (registry.ts `install`); nothing on it is O(number of apps). Mutations of one app are serialized
// through a per-app promise chain; different apps never wait for each other.
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SvcError } from '@svc/protocol';
import type { Logger } from '../log/logger.ts';
import { othersAccess, parseAppDefinition, type AppDefinition } from '../model/app-definition.ts';
import type { AdoptionRules } from '../privilege/adoption.ts';
import { realClock } from '../util/clock.ts';
import { adoptByPid, adoptionRules, type PidAdoptionContext } from './adopt-pid.ts';
import { AppStore, refuseReservedName } from './app-store.ts';
import { appView, CpuSamplesHook, type AppViewContext } from './app-view.ts';
import { clusterSource, type ClusterApps } from './cluster-apps.ts';
import { refuseForeignChange } from './definition-sources.ts';
import { findDependencyCycle } from './dependencies.ts';
import { HealthChecker } from './health.ts';
import { AdoptedHook } from './hooks/adopted.ts';
import { CgroupHook } from './hooks/cgroup.ts';
import { AppEnvironment, EnvironmentHook } from './hooks/environment.ts';
import { HealthHook } from './hooks/health.ts';
import { ExecutionUsers, IdentityHook } from './hooks/identity.ts';
import { OutputHook } from './hooks/output.ts';
import { SnapshotHook } from './hooks/snapshot.ts';
import type { AppLifecycle } from './lifecycle.ts';
import {
  DEFAULT_ADOPTED_POLL_MS,
  DEFAULT_HEALTH_INTERVAL_MS,
  DEFAULT_STOP_GRACE_MS,
  type SupervisorOptions,
} from './options.ts';
import { OutputStore } from './output-store.ts';
import { ProcessKeys } from './process-keys.ts';
import type { ProcessRunner } from './process-runner.ts';
import { AppRegistry } from './registry.ts';
import { probeResourceLimiter } from './resource-limit.ts';
import { startRun, syncRun, type RunContext } from './runs.ts';
import { createRunner, spawnerPaths, userSwitchOf } from './spawner/launch.ts';
import type { SpawnerRunner } from './spawner/spawner-runner.ts';
import { startApps } from './startup.ts';
import type {
  AppView,
  OutputChunk,
  OutputQuery,
  RunOptions,
  SupervisorApi,
  SupervisorEvent,
} from './types.ts';

export type { SupervisorOptions } from './options.ts';

/** What a Supervisor is made of (createSupervisor builds it). */
interface SupervisorParts {
  registry: AppRegistry;
  runner: ProcessRunner;
  /** Why processes are spawned in-process, when they are. */
  spawnerReason: string | undefined;
  store: AppStore;
  output: OutputStore;
  keys: ProcessKeys;
  users: ExecutionUsers;
  snapshot: SnapshotHook;
  adopted: AdoptedHook;
  cgroups: CgroupHook;
  cpu: CpuSamplesHook;
  /** privilege/adoption.ts's rules for a caller uid, svc's own processes protected. */
  rulesFor: (callerUid: number) => AdoptionRules;
  now: () => number;
  logger: Logger;
}

/** The `name` of an untrusted definition when it is a string (validated by the parse after). */
function definitionName(definition: unknown): string | undefined {
  if (typeof definition !== 'object' || definition === null) return undefined;
  const name: unknown = Object.getOwnPropertyDescriptor(definition, 'name')?.value;
  return typeof name === 'string' ? name : undefined;
}

/** svc-spawner's pid, 0 when processes are spawned in-process. */
function spawnerPidOf(runner: ProcessRunner): number {
  return runner.kind === 'native' ? (runner as SpawnerRunner).spawnerPid() : 0;
}

export class Supervisor implements SupervisorApi {
  /** The cluster source of definitions: what the cluster worker applies and withdraws. */
  readonly cluster: ClusterApps;
  readonly #parts: SupervisorParts;
  readonly #registry: AppRegistry;
  readonly #apps: ReadonlyMap<string, AppLifecycle>;
  readonly #viewContext: AppViewContext;
  readonly #adoption: PidAdoptionContext;
  readonly #runs: RunContext;
  #detached = false;

  constructor(parts: SupervisorParts) {
    const { registry, now, logger, output } = parts;
    this.#parts = parts;
    this.#registry = registry;
    this.#apps = registry.apps;
    this.cluster = clusterSource(registry, logger, now);
    this.#viewContext = {
      now,
      output,
      limiter: parts.cgroups.limiter,
      limitStatus: parts.cgroups.status,
      cpuSamples: parts.cpu.samples,
      sourceOf: (name) => registry.sourceOf(name),
      conflictOf: (name) => this.cluster.conflict(name),
    };
    this.#adoption = {
      registry,
      users: parts.users,
      rulesFor: parts.rulesFor,
      startTicksOf: (process) => parts.snapshot.startTicksOf(process),
      adopted: parts.adopted,
      snapshot: parts.snapshot.writer,
    };
    this.#runs = { registry, output, now, logger };
  }

  /** The app view (app-view.ts); `usage` reads /proc (get/list only, never a mutation's answer). */
  #view(app: AppLifecycle, usage = true): AppView {
    return appView(app, this.#viewContext, usage);
  }

  #mustGet(name: string): AppLifecycle {
    const app = this.#apps.get(name);
    if (app === undefined) throw new SvcError('app_not_found', `no application named ${name}`);
    return app;
  }

  list(): AppView[] {
    return [...this.#apps.values()].map((app) => this.#view(app));
  }

  get(name: string): AppView | undefined {
    const app = this.#apps.get(name);
    return app === undefined ? undefined : this.#view(app);
  }

  definition(name: string): AppDefinition | undefined {
    return this.#apps.get(name)?.def;
  }

  access(name: string): ReturnType<SupervisorApi['access']> {
    const app = this.#apps.get(name);
    if (app === undefined) return undefined;
    return { owner: app.def.owner_principal_id, others: othersAccess(app.def), system: app.def.system };
  }

  async register(definition: unknown, owner: string, caller = owner): Promise<AppView> {
    const { now } = this.#parts;
    const registry = this.#registry;
    // The definition being replaced lets a masked secret_env value (echoed from GET) keep its value.
    const named = definitionName(definition);
    const previous = named === undefined ? undefined : this.#apps.get(named)?.def;
    const parsed = parseAppDefinition(
      definition,
      previous === undefined ? { now: now() } : { now: now(), previous },
    );
    refuseReservedName(parsed.name);
    return registry.serial(parsed.name, async () => {
      const existing = this.#apps.get(parsed.name);
      if (existing !== undefined)
        refuseForeignChange(parsed.name, registry.sourceOf(parsed.name), 'replaced');
      const def =
        existing === undefined
          ? parsed
          : parseAppDefinition(definition, { now: now(), previous: existing.def });
      def.owner_principal_id = existing?.def.owner_principal_id ?? owner;
      if (existing !== undefined && def.owner_principal_id !== caller)
        this.#parts.users.refuseActingAsOwner(def, caller);
      const cycle = findDependencyCycle(
        def.name,
        def.depends_on,
        (name) => this.#apps.get(name)?.def.depends_on,
      );
      if (cycle !== undefined)
        throw new SvcError('invalid_app', `depends_on: dependency cycle ${cycle.join(' -> ')}`);
      // `pid` is also a runtime field: a client that sends back what GET returned (App Mesh 3.0
      // SDKs send their read-back App whole) echoes the pid of the process svc spawned for this
      // app. That is a plain replacement, not an adoption.
      const own = existing?.process;
      if (
        def.pid !== undefined &&
        existing?.def.pid === undefined &&
        own?.pid === def.pid &&
        own.external !== true
      )
        delete def.pid;
      const app =
        def.pid !== undefined
          ? await adoptByPid(this.#adoption, def, existing)
          : await registry.install({ def, source: 'local' }, existing);
      return this.#view(app, false);
    });
  }

  async remove(name: string): Promise<void> {
    const app = this.#mustGet(name);
    refuseForeignChange(name, this.#registry.sourceOf(name), 'removed');
    await this.#registry.serial(name, () => this.#registry.removeNow(app));
  }

  async enable(name: string): Promise<AppView> {
    const app = this.#mustGet(name);
    const registry = this.#registry;
    if (registry.sourceOf(name) === 'cluster') refuseForeignChange(name, 'cluster', 'enabled');
    if (app.def.system) return registry.serial(name, () => Promise.resolve(this.#startSystemApp(app)));
    return registry.serial(name, async () => {
      await registry.setEnabled(app, true);
      return this.#view(app, false);
    });
  }

  async disable(name: string): Promise<AppView> {
    const app = this.#mustGet(name);
    const registry = this.#registry;
    if (registry.sourceOf(name) === 'cluster') refuseForeignChange(name, 'cluster', 'disabled');
    return registry.serial(name, async () => {
      await registry.setEnabled(app, false);
      return this.#view(app, false);
    });
  }

  /**
   * `enable` of a system application (only svc-admin sees one). One that is enabled but not running
   * (in its restart backoff) starts now with its crash history forgotten; a running one is left
   * alone. A disabled one stays refused (spec: re-enabling a system application needs local
   * access). Nothing is written: system apps are not stored.
   */
  #startSystemApp(app: AppLifecycle): AppView {
    if (!app.def.enabled)
      throw new SvcError(
        'system_app',
        `${app.name} is a disabled system application: re-enabling it needs local access to the host`,
      );
    if (app.process === undefined && app.state !== 'stopping') {
      this.#parts.logger.info('system app started on request', { app: app.name, state: app.state });
      this.#registry.rerun(app);
    }
    return this.#view(app, false);
  }

  health(name: string): 0 | 1 | undefined {
    return this.#apps.get(name)?.computeHealth();
  }

  async readOutput(name: string, query: OutputQuery): Promise<OutputChunk> {
    this.#mustGet(name);
    return this.#parts.output.read(name, query);
  }

  async run(
    input: unknown,
    options: RunOptions,
    owner: string,
  ): Promise<{ name: string; process_uuid: string }> {
    const app = await startRun(this.#runs, input, options, owner, false);
    return { name: app.name, process_uuid: app.runtime.uuids[0] ?? '' };
  }

  syncRun(
    input: unknown,
    options: RunOptions,
    owner: string,
  ): Promise<{ output: Buffer; exitCode: number | undefined }> {
    return syncRun(this.#runs, input, options, owner);
  }

  onEvent(listener: (event: SupervisorEvent) => void): () => void {
    return this.#registry.onEvent(listener);
  }

  /** Stop supervising without killing processes (daemon shutdown; processes keep running). */
  async detach(): Promise<void> {
    if (this.#detached) return;
    const { snapshot, output, store, runner } = this.#parts;
    for (const app of this.#apps.values()) {
      if (app.process !== undefined) snapshot.startTicksOf(app.process);
      app.detach();
    }
    this.#detached = true;
    this.#registry.host.detach(); // health checks, cgroups, the adopted poll; no /proc read any more
    output.close(); // first: no size-cap release may follow the snapshot's final write
    await snapshot.writer.close();
    await store.close();
    runner.close?.(); // the spawner keeps the processes (and their exits) for the next daemon
  }

  /** SVC_PROCESS_KEY of the app's current (or last) process. */
  processKey(name: string): string | undefined {
    const uuid = this.#apps.get(name)?.runtime.uuids[0];
    return uuid === undefined ? undefined : this.#parts.keys.keyOf(uuid);
  }

  verifyProcessKey(name: string, key: string): 'ok' | 'superseded' | 'unknown' {
    const app = this.#apps.get(name);
    return app === undefined ? 'unknown' : this.#parts.keys.verify(app.runtime.uuids, key);
  }

  /** Lifecycle state of an app (tests, diagnostics). */
  state(name: string): string | undefined {
    return this.#apps.get(name)?.state;
  }

  spawner(): ReturnType<SupervisorApi['spawner']> {
    const { runner } = this.#parts;
    if (runner.kind === 'native')
      return { kind: 'native', pid: spawnerPidOf(runner) || undefined, reason: undefined };
    return { kind: 'inprocess', pid: undefined, reason: this.#parts.spawnerReason };
  }
}

/** The supervisor of `options.workDir`, its apps loaded, re-attached and decided. */
export async function createSupervisor(options: SupervisorOptions): Promise<Supervisor> {
  const logger = options.logger.child({ component: 'supervisor' });
  const now = options.now ?? Date.now;
  const workDir = options.workDir;
  const stopGraceMs = options.stopGraceMs ?? DEFAULT_STOP_GRACE_MS;
  const paths = spawnerPaths(options.installRoot ?? resolve(import.meta.dirname, '../../../..'), workDir);
  const userSwitch = options.userSwitch ?? userSwitchOf(paths);
  // TDZ-safe: neither the spawner's acknowledgements nor the output size cap (a timer interval
  // after start-up) flush before `snapshot` exists.
  const flushSnapshot = (): Promise<void> => snapshot.writer.flush();
  const { runner, reason } =
    options.runner === undefined
      ? await createRunner(options.spawnerMode ?? 'auto', paths, userSwitch, flushSnapshot, logger)
      : { runner: options.runner, reason: undefined };
  mkdirSync(workDir, { recursive: true, mode: 0o700 });
  const store = new AppStore(join(workDir, 'apps'), options.crypter, { journal: true });
  const output = new OutputStore(join(workDir, 'stdout'), {
    ...(options.outputMaxBytes === undefined ? {} : { maxFileBytes: options.outputMaxBytes }),
    // The first kept position is durable before the bytes below it are released.
    beforeRelease: flushSnapshot,
    onReleaseError: (app, error) =>
      logger.warn('output size cap not enforced: releasing old output failed', { app, error }),
  });
  const keys = new ProcessKeys(options.processKeySecret);
  const users = new ExecutionUsers(options.executionUserOf);
  const environment = new AppEnvironment({ systemEnv: options.systemEnv });
  const health = new HealthChecker(userSwitch, options.healthIntervalMs ?? DEFAULT_HEALTH_INTERVAL_MS);
  const cgroups = new CgroupHook(probeResourceLimiter(logger, options.cgroupRoot, workDir), runner);
  const cpu = new CpuSamplesHook();
  const rulesFor = (callerUid: number): AdoptionRules =>
    adoptionRules(callerUid, spawnerPidOf(runner), registry.apps.values());
  const adopted = new AdoptedHook({
    pollMs: options.adoptedPollMs ?? DEFAULT_ADOPTED_POLL_MS,
    users,
    rulesFor,
    logger,
  });
  const snapshot: SnapshotHook = new SnapshotHook({
    file: join(workDir, '.snapshot'),
    apps: () => registry.apps.values(),
    output,
    now,
    logger,
  });
  const registry: AppRegistry = new AppRegistry({
    runner,
    clock: realClock(now),
    stopGraceMs,
    // In this order: the execution user first (an unknown user fails the start before anything
    // is opened), then the environment (it needs the user), the output file and the cgroups of
    // the spawn; then what follows a start or an exit (health checks, cpu samples, the adopted
    // poll), and last the snapshot, which records what the others did.
    hooks: [
      new IdentityHook(users),
      new EnvironmentHook({
        environment,
        keyOf: (uuid) => keys.keyOf(uuid),
        daemonUrl: options.daemonUrl,
        now,
        peerEnvironment: options.peerEnvironment,
      }),
      new OutputHook(output),
      cgroups,
      new HealthHook(health, users, environment),
      cpu,
      adopted,
      snapshot,
    ],
    signalExternal: (app, process, signal) => adopted.signal(app, process, signal),
    store,
    output,
    logger,
  });
  await startApps({
    sources: options,
    workDir,
    store,
    crypter: options.crypter,
    registry,
    runner,
    output,
    adopted,
    snapshot: snapshot.writer,
    keyOf: (uuid) => keys.keyOf(uuid),
    stopGraceMs,
    now,
    logger,
  });
  const parts = {
    registry,
    runner,
    spawnerReason: reason,
    store,
    output,
    keys,
    users,
    snapshot,
    adopted,
    cgroups,
    cpu,
  };
  return new Supervisor({ ...parts, rulesFor, now, logger });
}
