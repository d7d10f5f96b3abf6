// The supervisor: the registry of apps (Map by name), wiring each AppLifecycle to the real ports
// (process runner, output store, cgroups, health checks, snapshot) and implementing SupervisorApi.
//
// Hot path (register -> running): validate, persist atomically (fsync) BEFORE acknowledging, then
// spawn; nothing on it is O(number of apps). Mutations of one app are serialized through a
// per-app promise chain; different apps never wait for each other.
import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import { closeSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pid as daemonPid } from 'node:process';
import { SvcError } from '@svc/protocol';
import type { Logger } from '../log/logger.ts';
import { lookupOsUser, userEnv, type OsIdentity } from '../privilege/os-user.ts';
import type { AppDefinition } from '../model/app-definition.ts';
import { othersAccess, parseAppDefinition } from '../model/app-definition.ts';
import type { SecretCrypter } from '../model/secret-crypter.ts';
import { AppStore, refuseReservedName } from './app-store.ts';
import { appView, type AppViewContext } from './app-view.ts';
import { recoverHeld, recoverOrphans } from './orphan-recovery.ts';
import { createClusterApps, type ClusterApps } from './cluster-apps.ts';
import {
  loadStartupDefinitions,
  refuseForeignChange,
  startupSource,
  type DefinitionSource,
} from './definition-sources.ts';
import { findDependencyCycle, unmetDependencies } from './dependencies.ts';
import { HealthChecker } from './health.ts';
import { AppLifecycle } from './lifecycle.ts';
import type { LifecycleHost, RunningProcess } from './lifecycle.ts';
import { realClock } from '../util/clock.ts';
import { OutputStore } from './output-store.ts';
import { isSameProcess, readProcStat } from './proc-stats.ts';
import { adoptionRefusal, readProcessFacts, type AdoptionRules } from '../privilege/adoption.ts';
import { signalProcess } from '../privilege/signals.ts';
import { createProcessRunner } from './process-runner.ts';
import {
  chooseSpawner,
  connectSpawner,
  spawnerPaths,
  userSwitchOf,
  type SpawnerMode,
} from './spawner/launch.ts';
import type { UserSwitch } from '../privilege/user-switch.ts';
import { createSpawnerRunner, type SpawnerRunner } from './spawner/spawner-runner.ts';
import type { ProcessRunner } from './process-runner.ts';
import { probeResourceLimiter } from './resource-limit.ts';
import type { ResourceLimiter } from './resource-limit.ts';
import {
  DEFAULT_RUN_LIFECYCLE_SECONDS,
  DEFAULT_SYNC_RUN_TIMEOUT_SECONDS,
  transientDefinition,
} from './runs.ts';
import { readSnapshot, SnapshotWriter } from './snapshot.ts';
import type { SnapshotApp, SnapshotData } from './snapshot.ts';
import type {
  AppView,
  OutputChunk,
  OutputQuery,
  RunOptions,
  SupervisorApi,
  SupervisorEvent,
} from './types.ts';

export interface SupervisorOptions {
  workDir: string;
  crypter: SecretCrypter;
  /** REST base URL injected as SVC_DAEMON_URL. */
  daemonUrl: string;
  logger: Logger;
  now?: () => number;
  /** SIGTERM -> SIGKILL grace (default 5000 ms). */
  stopGraceMs?: number;
  /** health_check_cmd period (default 10 s). */
  healthIntervalMs?: number;
  /** Cap of one output file on disk in bytes (config `output_max_bytes`); default 16 MiB. */
  outputMaxBytes?: number;
  /** Directory of bundled system apps (*.yaml, loaded trusted). */
  bundledAppsDir?: string;
  /** Bundled apps not to load (e.g. `identity` in external auth mode). */
  skipBundled?: (name: string) => boolean;
  /**
   * Extra environment of bundled system apps only (trusted programs of the install): the daemon's
   * SVC_* settings and a PATH whose `node` is the daemon's own Node.
   */
  systemEnv?: Record<string, string>;
  /** Working directory of a bundled system app that names none (the install root). */
  systemCwd?: string;
  /** Key of the process keys: HMAC-SHA256(processKeySecret, process_uuid). */
  processKeySecret: Buffer;
  /**
   * The OS user name the apps of principal `owner` run as (its `execution_user`, else
   * BaseConfig.DefaultExecUser), undefined = the daemon's own user. Asked at every start, so a
   * change of the principal's record applies from the next start. System apps never ask.
   */
  executionUserOf?: (owner: string | undefined) => string | undefined;
  /**
   * SVC_SPAWNER: `native` (svc-spawner, or the start fails), `inprocess`, or `auto` (the spawner
   * when it can be built and started, else in-process, logged). Ignored when `runner` is given.
   */
  spawnerMode?: SpawnerMode;
  /** Where packages/spawner is (the install root). */
  installRoot?: string;
  /**
   * The privilege boundary of the processes svcd starts itself (in-process runner, health checks);
   * default: svc-spawner's `exec` mode from the install root. daemon.ts passes the one it shares
   * with file transfers.
   */
  userSwitch?: UserSwitch;
  /** Test seams. */
  runner?: ProcessRunner;
  cgroupRoot?: string;
  /** Period of the liveness poll of adopted processes (default 250 ms). */
  adoptedPollMs?: number;
  /**
   * Cluster mode: the peer services' variables (`SVC_SERVICE_<APP>_ADDR`) added to the environment
   * of every non-system process at its start (cluster/services.ts).
   */
  peerEnvironment?: () => Record<string, string>;
}

export interface Supervisor extends SupervisorApi {
  /** SVC_PROCESS_KEY of the app's current (or last) process. */
  processKey(name: string): string | undefined;
  verifyProcessKey(name: string, key: string): 'ok' | 'superseded' | 'unknown';
  /** Lifecycle state of an app (tests, diagnostics). */
  state(name: string): string | undefined;
  /** The cluster source of definitions: what the cluster worker applies and withdraws. */
  cluster: ClusterApps;
}

const DEFAULT_STOP_GRACE_MS = 5_000;
const DEFAULT_HEALTH_INTERVAL_MS = 10_000;
const DEFAULT_ADOPTED_POLL_MS = 250;

function withoutTz(env: Record<string, string>): Record<string, string> {
  if (env['TZ'] === undefined) return env;
  const { TZ: _dropped, ...rest } = env;
  return rest;
}

/** The daemon's environment minus its own SVC_* settings (which may carry secrets). */
function baseEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith('SVC_')) env[key] = value;
  }
  return env;
}

/** The `name` of an untrusted definition when it is a string (validated by the parse after). */
function definitionName(definition: unknown): string | undefined {
  if (typeof definition !== 'object' || definition === null) return undefined;
  const name: unknown = Object.getOwnPropertyDescriptor(definition, 'name')?.value;
  return typeof name === 'string' ? name : undefined;
}

export async function createSupervisor(options: SupervisorOptions): Promise<Supervisor> {
  const logger = options.logger.child({ component: 'supervisor' });
  const now = options.now ?? Date.now;
  const clock = realClock(now);
  const workDir = options.workDir;
  let spawnerReason: string | undefined;
  let runner: ProcessRunner;
  const paths = spawnerPaths(options.installRoot ?? resolve(import.meta.dirname, '../../../..'), workDir);
  const users = options.userSwitch ?? userSwitchOf(paths);
  if (options.runner !== undefined) {
    runner = options.runner;
  } else {
    const choice = await chooseSpawner(options.spawnerMode ?? 'auto', paths, logger);
    spawnerReason = choice.reason;
    runner =
      choice.connection === undefined || choice.binary === undefined
        ? createProcessRunner(users)
        : createSpawnerRunner({
            connection: choice.connection,
            reconnect: () => connectSpawner(choice.binary as string, paths.runDir),
            inProcess: createProcessRunner(users),
            // An exit is acknowledged (and forgotten by the spawner) once the snapshot records it.
            beforeAcknowledge: () => snapshot.flush(),
            logger,
          });
  }
  mkdirSync(workDir, { recursive: true, mode: 0o700 });
  const store = new AppStore(join(workDir, 'apps'), options.crypter, { journal: true });
  const output = new OutputStore(join(workDir, 'stdout'), {
    ...(options.outputMaxBytes === undefined ? {} : { maxFileBytes: options.outputMaxBytes }),
    // The first kept position is durable before the bytes below it are released (TDZ-safe: the
    // first trim runs a timer interval after start-up).
    beforeRelease: () => snapshot.flush(),
    onReleaseError: (app, error) =>
      logger.warn('output size cap not enforced: releasing old output failed', { app, error }),
  });
  const limiter: ResourceLimiter = probeResourceLimiter(logger, options.cgroupRoot, workDir);
  const health = new HealthChecker(users, options.healthIntervalMs ?? DEFAULT_HEALTH_INTERVAL_MS);
  const baseEnv = baseEnvironment();
  // One KeyObject for every HMAC: createHmac with a raw Buffer re-validates and copies the key
  // each call (~0.1 ms on the start path and on every worker request's key check).
  const secret = createSecretKey(options.processKeySecret);
  const keyOf = (uuid: string): string => createHmac('sha256', secret).update(uuid).digest('hex');
  // The keys of recent process uuids as bytes: a worker's every task request checks its key, and
  // the HMAC per check was most of that check's cost. Bounded; a dropped entry is recomputed.
  const keyBytes = new Map<string, Buffer>();
  const keyBytesOf = (uuid: string): Buffer => {
    let bytes = keyBytes.get(uuid);
    if (bytes === undefined) {
      if (keyBytes.size >= 1024) keyBytes.clear();
      bytes = createHmac('sha256', secret).update(uuid).digest();
      keyBytes.set(uuid, bytes);
    }
    return bytes;
  };

  const apps = new Map<string, AppLifecycle>();
  /** Source of every app's definition (definition-sources.ts). */
  const sources = new Map<string, DefinitionSource>();
  const limitStatus = new Map<string, string>();
  /** Apps whose process being spawned writes itself into its cgroups (prepareSpawn → started). */
  const placedInCgroups = new Set<string>();
  const cpuSamples = new Map<string, { ticks: number; at: number; uuid: string }>();
  const listeners = new Set<(event: SupervisorEvent) => void>();
  const chains = new Map<string, Promise<unknown>>();
  const adopted = new Set<AppLifecycle>();
  let adoptedTimer: NodeJS.Timeout | undefined;
  let detached = false;

  const emit = (event: SupervisorEvent): void => {
    for (const listener of listeners) {
      try {
        listener(event);
      } catch (error) {
        logger.error('event listener failed', { event: event.type, app: event.app, error });
      }
    }
    wakeDependents();
  };

  /**
   * depends_on: after any start, exit, health, enable/disable or removal, apps waiting for a
   * dependency look again (once per turn of the event loop, however many events came).
   */
  let dependentsWake: Promise<void> | undefined;
  const wakeDependents = (): void => {
    dependentsWake ??= Promise.resolve().then(() => {
      dependentsWake = undefined;
      for (const app of apps.values()) if (app.state === 'waiting') app.decide();
    });
  };

  /** Serialize mutations of one app. */
  const serial = <T>(name: string, task: () => Promise<T>): Promise<T> => {
    const previous = chains.get(name) ?? Promise.resolve();
    const next = previous.then(task, task);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    chains.set(name, settled);
    void settled.then(() => {
      if (chains.get(name) === settled) chains.delete(name);
    });
    return next;
  };

  /**
   * The start time of a running process, read from /proc on first need for a child we spawned:
   * off the start path (0.1-0.3 ms of synchronous /proc read per start), mostly by the next
   * snapshot write. The child is not reaped before its exit clears `app.process` (same turn), so
   * its pid cannot have been reused in between; after `detach` exits are no longer recorded, so
   * nothing is read any more (detach reads every running child first).
   */
  const startTicksOf = (p: RunningProcess): number => {
    if (p.startTicks === 0 && !p.adopted && !detached) p.startTicks = readProcStat(p.pid)?.startTicks ?? 0;
    return p.startTicks;
  };

  const collect = (): SnapshotData => {
    const processes: SnapshotData['processes'] = [];
    const appsData: Record<string, SnapshotApp> = {};
    for (const app of apps.values()) {
      const p = app.process;
      if (p !== undefined && startTicksOf(p) > 0) {
        processes.push({
          app: app.name,
          pid: p.pid,
          startTicks: p.startTicks,
          processUuid: p.processUuid,
          startedAt: p.startedAt,
          ...(p.external === true ? { external: true } : {}),
          ...(p.signalPidOnly === true ? { signalPidOnly: true } : {}),
        });
      }
      appsData[app.name] = {
        ...app.runtime,
        uuids: [...app.runtime.uuids],
        wantRun: app.wantRun,
        crashed: app.crashed,
        transient: app.transient,
        outputs: output.files(app.name).map((f) => ({ ...f })),
      };
    }
    return { version: 1, writtenAt: now(), processes, apps: appsData };
  };
  const snapshot = new SnapshotWriter(join(workDir, '.snapshot'), collect, logger);

  const pollAdopted = (): void => {
    for (const app of adopted) {
      const p = app.process;
      if (p === undefined || !p.adopted) {
        adopted.delete(app);
      } else if (!isSameProcess(p.pid, p.startTicks)) {
        adopted.delete(app);
        app.adoptedExited();
      }
    }
    if (adopted.size === 0 && adoptedTimer !== undefined) {
      clearInterval(adoptedTimer);
      adoptedTimer = undefined;
    }
  };
  const watchAdopted = (app: AppLifecycle): void => {
    adopted.add(app);
    if (adoptedTimer === undefined) {
      adoptedTimer = setInterval(pollAdopted, options.adoptedPollMs ?? DEFAULT_ADOPTED_POLL_MS);
      adoptedTimer.unref();
    }
  };

  /** `deleteFile` false: undo of a registration whose write failed (the file is as it was). */
  const removeNow = async (app: AppLifecycle, deleteFile = true): Promise<void> => {
    if (app.state === 'removed') return;
    await app.stop('remove');
    // The stop publishes no EXIT (a waiter sees REMOVED alone); REMOVED comes first, then the
    // purge (subscriptions of the app are dropped on this event).
    emit({ type: 'REMOVED', app: app.name });
    app.markRemoved();
    apps.delete(app.name);
    const source = sources.get(app.name);
    sources.delete(app.name);
    health.untrack(app.name);
    limiter.release(app.name);
    limitStatus.delete(app.name);
    cpuSamples.delete(app.name);
    adopted.delete(app);
    output.remove(app.name);
    if (source === 'local' && deleteFile) await store.delete(app.name);
    snapshot.schedule();
  };

  // TZ is read live: POST /svc/config {"BaseConfig": {"PosixTimezone": …}} sets or clears the
  // daemon's own TZ (config/host-config-store.ts), and processes started after it get the same zone.
  const liveTimezone = (): Record<string, string> => {
    const tz = process.env['TZ'];
    return tz === undefined ? {} : { TZ: tz };
  };
  const envFor = (def: AppDefinition): Record<string, string> => ({
    ...withoutTz(baseEnv),
    ...liveTimezone(),
    ...(def.system ? options.systemEnv : undefined),
    ...def.env,
    ...def.secret_env,
  });

  /** The execution user of an app's processes; throws (the start fails) for an unknown user. */
  const identityOf = (def: AppDefinition): OsIdentity | undefined => {
    if (def.system) return undefined;
    const name = options.executionUserOf?.(def.owner_principal_id);
    if (name === undefined) return undefined;
    const identity = lookupOsUser(name);
    if (identity === undefined) throw new Error(`execution user ${name} does not exist on this host`);
    return identity;
  };

  const host: LifecycleHost = {
    runner,
    clock,
    stopGraceMs: options.stopGraceMs ?? DEFAULT_STOP_GRACE_MS,
    emit,
    startBlocker(app) {
      if (app.def.docker_image !== undefined)
        return { error: 'docker_image: not supported, no container runtime is configured' };
      const waitingFor = unmetDependencies(app.def.depends_on, (name) => {
        const other = apps.get(name);
        if (other === undefined || other.state === 'removed') return undefined;
        return {
          enabled: other.def.enabled,
          running: other.state === 'running',
          health: other.computeHealth(),
        };
      });
      return waitingFor.length > 0 ? { waitingFor } : undefined;
    },
    prepareSpawn(app, processUuid) {
      const user = identityOf(app.def);
      const env = { ...envFor(app.def), ...(user === undefined ? {} : userEnv(user)) };
      env['SVC_PROCESS_KEY'] = keyOf(processUuid);
      env['SVC_PROCESS_UUID'] = processUuid; // with the key: lets the orphan scan recognize it
      env['SVC_APPLICATION_NAME'] = app.name;
      env['SVC_LAUNCH_TIME'] = new Date(now()).toISOString();
      env['SVC_DAEMON_URL'] = options.daemonUrl;
      if (!app.def.system && options.peerEnvironment !== undefined)
        Object.assign(env, options.peerEnvironment());
      const fd = output.openForProcess(app.name, processUuid, app.def.stdout_backup_count);
      // The child holds its own copy of the fd once spawned; ours is closed right after.
      queueMicrotask(() => closeSync(fd));
      // svc-spawner's child writes itself into the app's cgroups before exec (the process never
      // runs a single instruction outside its limits); in-process, the pid is moved after spawn.
      const limit = app.def.resource_limit;
      placedInCgroups.delete(app.name);
      if (limit !== undefined && runner.placesInCgroups && limiter.version !== undefined) {
        const { status, procs } = limiter.prepare(app.name, limit);
        limitStatus.set(app.name, status);
        if (procs.length > 0) {
          placedInCgroups.add(app.name);
          return { env, outputFd: fd, user, cgroupProcs: procs };
        }
      }
      return { env, outputFd: fd, user };
    },
    started(app, process) {
      // process.startTicks of a spawned child: read later, see startTicksOf.
      if (process.external === true) {
        // No output to capture, but a (empty) file per process keeps reads by process_uuid and
        // long polls (woken at exit) uniform.
        closeSync(output.openForProcess(app.name, process.processUuid, app.def.stdout_backup_count));
      }
      if (placedInCgroups.delete(app.name)) {
        // already in its cgroups (svc-spawner's child wrote itself there before exec)
      } else if (app.def.resource_limit !== undefined) {
        limitStatus.set(app.name, limiter.apply(app.name, process.pid, app.def.resource_limit));
      }
      let user: OsIdentity | undefined;
      let userGone = false;
      try {
        user = identityOf(app.def);
      } catch {
        userGone = true; // vanished since the spawn: never run the check as the daemon's user instead
      }
      if (userGone && app.def.health_check_cmd !== undefined) {
        app.reportHealth(1);
      } else if (app.def.health_check_cmd !== undefined) {
        health.track({
          name: app.name,
          command: app.def.health_check_cmd,
          cwd: app.def.working_dir,
          env: { ...envFor(app.def), ...(user === undefined ? {} : userEnv(user)) },
          user,
          report: (h) => app.reportHealth(h),
        });
      }
      snapshot.schedule();
    },
    exitError(app) {
      return app.def.resource_limit === undefined ? undefined : limiter.exitReason(app.name);
    },
    exited(app, process, exitCode) {
      health.untrack(app.name);
      placedInCgroups.delete(app.name);
      // The app's cgroups go with its process (re-created at the next start).
      if (app.def.resource_limit !== undefined && limiter.version !== undefined) limiter.release(app.name);
      cpuSamples.delete(app.name);
      // A process stopped by its app's removal has no exit to report (no EXIT, no X-Exit-Code):
      // the output goes with the app, and a long poll on it answers 404.
      if (app.lastStop !== 'remove') output.markExited(app.name, process.processUuid, exitCode);
      if (process.adopted) adopted.delete(app);
    },
    changed() {
      snapshot.schedule();
    },
    signalExternal(app, p, signal) {
      const facts = readProcessFacts(p.pid);
      if (facts === undefined || !isSameProcess(p.pid, p.startTicks)) return; // gone: the poll reports it
      const callerUid = executionUid(app.def);
      const refusal =
        callerUid === undefined
          ? 'the execution user of the owner no longer exists'
          : adoptionRefusal(p.pid, facts, adoptionRules(app.def, callerUid));
      if (refusal === undefined) {
        signalProcess(p.pid, signal);
        return;
      }
      // It may no longer be signalled for this owner (it exec'd something setuid, the owner's
      // user changed): let it go, as if it had exited, and say so.
      logger.warn('adopted process released without a signal', {
        app: app.name,
        pid: p.pid,
        reason: refusal,
      });
      queueMicrotask(() => {
        if (app.process !== p) return;
        adopted.delete(app);
        app.adoptedExited();
      });
    },
    requestRemoval(app) {
      void serial(app.name, () => removeNow(app)).catch((error: unknown) =>
        logger.error('automatic removal failed', { app: app.name, error }),
      );
    },
  };

  /**
   * Starts a new app, or replaces the definition of `existing` (stopped first). A local definition
   * is written durably (concurrently with the spawn of a new app, before the spawn of a
   * replacement) and the call returns only after both; a cluster definition is not stored here.
   */
  const install = async (
    def: AppDefinition,
    existing: AppLifecycle | undefined,
    source: 'local' | 'cluster',
  ): Promise<AppView> => {
    // The durable write runs while the process is spawned; the call returns only after both,
    // so an acknowledged definition is never lost. If the write fails, the start is undone.
    const saved = source === 'local' ? store.save(def) : Promise.resolve();
    saved.catch(() => undefined); // awaited below, possibly after a stop: never "unhandled"
    if (existing === undefined) {
      const app = new AppLifecycle(def, host);
      apps.set(def.name, app);
      sources.set(def.name, source);
      output.restore(def.name, undefined);
      app.decide();
      try {
        await saved;
      } catch (error) {
        await removeNow(app, false);
        throw error;
      }
      return view(app, false);
    }
    await existing.stop('replace');
    // Unlike a new registration, a replacement spawns only once its definition is durable: a
    // crash in between would otherwise leave the next daemon adopting (by its environment) a
    // process of the unacknowledged definition while supervising it with the previous one.
    try {
      await saved;
    } catch (error) {
      // Not stored: the previous definition (still on disk) runs again.
      existing.resetForRun();
      existing.decide();
      snapshot.schedule();
      throw error;
    }
    existing.replace(def);
    existing.resetForRun();
    limitStatus.delete(def.name);
    existing.decide();
    snapshot.schedule();
    return view(existing, false);
  };

  const clusterApps = createClusterApps({
    logger,
    now,
    sourceOf: (name) => sources.get(name),
    install: (def) =>
      serial(def.name, async () => {
        const existing = apps.get(def.name);
        if (existing !== undefined && sources.get(def.name) !== 'cluster') return 'conflict';
        await install(def, existing, 'cluster');
        return existing === undefined ? 'started' : 'replaced';
      }),
    remove: (name) =>
      serial(name, async () => {
        const app = apps.get(name);
        if (app === undefined || sources.get(name) !== 'cluster') return false;
        await removeNow(app);
        return true;
      }),
  });

  const viewContext: AppViewContext = {
    now,
    output,
    limiter,
    limitStatus,
    cpuSamples,
    sourceOf: (name) => sources.get(name),
    conflictOf: (name) => clusterApps.conflict(name),
  };
  /** The app view (app-view.ts); `usage` reads /proc (get/list only, never a mutation's answer). */
  const view = (app: AppLifecycle, usage = true): AppView => appView(app, viewContext, usage);

  /** The uid the processes of `def`'s owner run as (its execution user; the daemon's own uid without one). */
  const executionUid = (def: AppDefinition): number | undefined => {
    const name = options.executionUserOf?.(def.owner_principal_id);
    return name === undefined ? process.getuid?.() : lookupOsUser(name)?.uid;
  };

  /**
   * A replacement keeps the app's owner, so its processes run as the OWNER's execution user: a
   * caller allowed to change another principal's app (shared, or app-manage-all) may do so only
   * when it runs as that same user or as root, else it would run code as a user it is not.
   */
  const refuseActingAsOwner = (def: AppDefinition, caller: string): void => {
    const callerUser = options.executionUserOf?.(caller);
    const callerUid = callerUser === undefined ? process.getuid?.() : lookupOsUser(callerUser)?.uid;
    const ownerUid = executionUid(def);
    if (callerUid === 0 || (callerUid !== undefined && callerUid === ownerUid)) return;
    throw new SvcError(
      'forbidden',
      `${def.name} belongs to another principal whose processes run as another OS user; replacing it would run your definition as that user`,
    );
  };

  /** Adoption and signal rules of privilege/adoption.ts for processes of `def`'s owner. */
  const adoptionRules = (def: AppDefinition, callerUid: number): AdoptionRules => {
    const protectedPids = new Set<number>([daemonPid]);
    const spawner = runner.kind === 'native' ? (runner as SpawnerRunner).spawnerPid() : 0;
    if (spawner > 0) protectedPids.add(spawner);
    for (const other of apps.values())
      if (other.def.system && other.process !== undefined) protectedPids.add(other.process.pid);
    const protectedGroups = new Set<number>([readProcStat(daemonPid)?.pgid ?? daemonPid]);
    if (spawner > 0) protectedGroups.add(spawner);
    return { callerUid, protectedPids, protectedGroups };
  };

  /**
   * Register `def` by adopting the running process `def.pid` instead of spawning (CONTRACT §7).
   * Refused when /proc/<pid> does not exist (or is a zombie), when privilege/adoption.ts refuses it
   * (not the caller's execution user's, pid 1, a kernel thread, svc's own processes), or when the
   * process (or its process group) is already managed. The process's start time is recorded, and
   * the snapshot is written before acknowledging, so a daemon restart re-attaches to it.
   */
  const adoptByPid = async (def: AppDefinition, existing: AppLifecycle | undefined): Promise<AppView> => {
    const pid = def.pid as number;
    const stat = readProcStat(pid);
    const facts = readProcessFacts(pid);
    if (stat === undefined || stat.state === 'Z' || facts === undefined)
      throw new SvcError('invalid_app', 'pid: no such process');
    const callerUid = executionUid(def);
    if (callerUid === undefined)
      throw new SvcError('invalid_app', 'pid: the execution user of the owner does not exist on this host');
    const refusal = adoptionRefusal(pid, facts, adoptionRules(def, callerUid));
    if (refusal !== undefined) throw new SvcError('invalid_app', refusal);
    const current = existing?.process;
    const keep = current !== undefined && current.pid === pid && startTicksOf(current) === stat.startTicks;
    if (!keep) {
      for (const other of apps.values()) {
        const p = other.process;
        if (p === undefined) continue;
        if (p.pid === pid)
          throw new SvcError('invalid_app', `pid: process ${pid} is already managed by ${other.name}`);
        if (p.signalPidOnly !== true && stat.pgid === p.pid)
          throw new SvcError('invalid_app', `pid: process ${pid} is in the process group of ${other.name}`);
      }
    }
    await store.save(def);
    if (existing !== undefined && keep) {
      // Echoed back (GET then PUT): the process is the one already adopted; keep it running.
      existing.replace(def);
      snapshot.schedule();
      return view(existing, false);
    }
    let app = existing;
    if (app === undefined) {
      app = new AppLifecycle(def, host);
      apps.set(def.name, app);
      sources.set(def.name, 'local');
      output.restore(def.name, undefined);
    } else {
      await app.stop('replace');
      app.replace(def);
      limitStatus.delete(def.name);
    }
    app.resetForRun();
    if (isSameProcess(pid, stat.startTicks)) {
      app.adoptExternal(pid, stat.startTicks);
      watchAdopted(app);
    } else {
      app.decide(); // it exited meanwhile: as if adopted and gone at once (the command runs)
    }
    await snapshot.flush();
    return view(app, false);
  };

  const mustGet = (name: string): AppLifecycle => {
    const app = apps.get(name);
    if (app === undefined) throw new SvcError('app_not_found', `no application named ${name}`);
    return app;
  };

  /**
   * `enable` of a system application (only svc-admin sees one). One that is enabled but not running
   * (in its restart backoff) starts now with its crash history forgotten; a running one is left
   * alone. A disabled one stays refused (spec: re-enabling a system application needs local
   * access). Nothing is written: system apps are not stored.
   */
  const startSystemApp = (app: AppLifecycle): AppView => {
    if (!app.def.enabled)
      throw new SvcError(
        'system_app',
        `${app.name} is a disabled system application: re-enabling it needs local access to the host`,
      );
    if (app.process === undefined && app.state !== 'stopping') {
      logger.info('system app started on request', { app: app.name, state: app.state });
      app.resetForRun();
      app.decide();
      snapshot.schedule();
    }
    return view(app, false);
  };

  // ---- load: bundled system apps, registered apps, snapshot --------------------------------------
  const loaded = await loadStartupDefinitions(options, store, options.crypter, logger);
  const previous = await readSnapshot(join(workDir, '.snapshot'), logger);
  for (const def of loaded) {
    const app = new AppLifecycle(def, host);
    apps.set(def.name, app);
    sources.set(def.name, startupSource(def));
    const saved = previous?.apps[def.name];
    output.restore(def.name, saved?.outputs);
    if (saved !== undefined) {
      app.restoreRuntime(
        {
          starts: saved.starts,
          lastStartAt: saved.lastStartAt ?? undefined,
          lastExitAt: saved.lastExitAt ?? undefined,
          returnCode: saved.returnCode ?? undefined,
          lastError: saved.lastError ?? undefined,
          uuids: saved.uuids,
        },
        saved.wantRun ?? true,
        saved.crashed ?? false,
      );
      if (saved.transient !== undefined && saved.transient !== null) app.markTransient(saved.transient);
    }
  }
  /** `pid/uuid` of snapshot entries refused for a start-time mismatch (see recoverOrphans). */
  const contradicted = new Set<string>();
  for (const entry of previous?.processes ?? []) {
    const app = apps.get(entry.app);
    const held = app === undefined ? undefined : runner.claim?.(entry.processUuid);
    if (app !== undefined && held !== undefined) {
      // svc-spawner held it while no daemon ran: its exit (maybe already past) has its real code.
      app.adoptHeld({ ...entry, adopted: false }, held);
      logger.info('re-attached to process held by svc-spawner', { app: entry.app, pid: entry.pid });
    } else if (app !== undefined && isSameProcess(entry.pid, entry.startTicks)) {
      const process: RunningProcess = { ...entry, adopted: true };
      app.adopt(process);
      watchAdopted(app);
      logger.info('re-attached to process', { app: entry.app, pid: entry.pid });
    } else if (app === undefined) {
      // Its app did not load here: a cluster app (not stored; the worker starts it again), a
      // deleted app, or a file that failed to load. The orphan rules judge a live process of it
      // (stopped without a definition file, left alone with one), so none runs twice.
      logger.info('snapshot entry of an app not loaded', { app: entry.app, pid: entry.pid });
    } else {
      contradicted.add(`${entry.pid}/${entry.processUuid}`);
      logger.info('snapshot entry not adopted (gone or pid reused)', { app: entry.app, pid: entry.pid });
    }
  }
  recoverOrphans({
    apps,
    workDir,
    previous,
    contradicted,
    keyOf,
    runner,
    stopGraceMs: options.stopGraceMs ?? DEFAULT_STOP_GRACE_MS,
    output,
    watchAdopted,
    now,
    logger,
  });
  recoverHeld({ apps, previous, runner, output, now, logger });
  runner.settle?.();
  for (const app of apps.values()) app.decide();
  // System apps are part of svc itself: a new daemon runs them anew (new code, configuration and
  // credentials re-read, e.g. a pending administrator password), so an adopted system process is
  // replaced by a deliberate stop and a fresh start. User apps are kept running.
  for (const app of apps.values()) {
    const p = app.process;
    if (!app.def.system || p === undefined || (!p.adopted && p.reattached !== true)) continue;
    logger.info('restarting a system app adopted from the previous daemon', { app: app.name });
    void serial(app.name, async () => {
      await app.stop('replace');
      app.resetForRun();
      app.decide();
      snapshot.schedule();
    });
  }
  snapshot.schedule();

  // ---- the API ---------------------------------------------------------------------------------
  const supervisor: Supervisor = {
    list() {
      return [...apps.values()].map((app) => view(app));
    },
    get(name) {
      const app = apps.get(name);
      return app === undefined ? undefined : view(app);
    },
    access(name) {
      const app = apps.get(name);
      if (app === undefined) return undefined;
      return { owner: app.def.owner_principal_id, others: othersAccess(app.def), system: app.def.system };
    },
    async register(definition, owner, caller = owner) {
      // The definition being replaced lets a masked secret_env value (echoed from GET) keep its value.
      const named = definitionName(definition);
      const previous = named === undefined ? undefined : apps.get(named)?.def;
      const parsed = parseAppDefinition(
        definition,
        previous === undefined ? { now: now() } : { now: now(), previous },
      );
      refuseReservedName(parsed.name);
      return serial(parsed.name, async () => {
        const existing = apps.get(parsed.name);
        if (existing !== undefined) refuseForeignChange(parsed.name, sources.get(parsed.name), 'replaced');
        const def =
          existing === undefined
            ? parsed
            : parseAppDefinition(definition, { now: now(), previous: existing.def });
        def.owner_principal_id = existing?.def.owner_principal_id ?? owner;
        if (existing !== undefined && def.owner_principal_id !== caller) refuseActingAsOwner(def, caller);
        const cycle = findDependencyCycle(def.name, def.depends_on, (name) => apps.get(name)?.def.depends_on);
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
        if (def.pid !== undefined) return adoptByPid(def, existing);
        return install(def, existing, 'local');
      });
    },
    async remove(name) {
      const app = mustGet(name);
      refuseForeignChange(name, sources.get(name), 'removed');
      await serial(name, () => removeNow(app));
    },
    async enable(name) {
      const app = mustGet(name);
      if (sources.get(name) === 'cluster') refuseForeignChange(name, 'cluster', 'enabled');
      if (app.def.system) return serial(name, () => Promise.resolve(startSystemApp(app)));
      return serial(name, async () => {
        const previousEnabled = app.def.enabled;
        if (!previousEnabled) {
          const saved = store.save(app.setEnabled(true)); // concurrent with the spawn, awaited before acknowledging
          saved.catch(() => undefined);
          app.resetForRun();
          app.decide();
          try {
            await saved;
          } catch (error) {
            app.setEnabled(false);
            await app.stop('disable');
            app.decide();
            throw error;
          }
          emit({ type: 'STATUS', app: name, enabled: true, previousEnabled });
          snapshot.schedule();
        }
        return view(app, false);
      });
    },
    async disable(name) {
      const app = mustGet(name);
      if (sources.get(name) === 'cluster') refuseForeignChange(name, 'cluster', 'disabled');
      return serial(name, async () => {
        const previousEnabled = app.def.enabled;
        if (previousEnabled) {
          const def = app.setEnabled(false);
          // The durable write runs while the process is stopped; both end before acknowledging.
          const saved = def.system ? Promise.resolve() : store.save(def);
          saved.catch(() => undefined);
          emit({ type: 'STATUS', app: name, enabled: false, previousEnabled });
          await app.stop('disable');
          app.decide();
          try {
            await saved;
          } catch (error) {
            // Not stored: the app is still enabled on disk, so it is enabled again here.
            app.setEnabled(true);
            app.resetForRun();
            app.decide();
            emit({ type: 'STATUS', app: name, enabled: true, previousEnabled: false });
            throw error;
          }
          snapshot.schedule();
        }
        return view(app, false);
      });
    },
    health(name) {
      return apps.get(name)?.computeHealth();
    },
    async readOutput(name, query: OutputQuery): Promise<OutputChunk> {
      mustGet(name);
      return output.read(name, query);
    },
    async run(input, runOptions: RunOptions, owner) {
      const app = await startTransient(input, runOptions, owner, false);
      return { name: app.name, process_uuid: app.runtime.uuids[0] ?? '' };
    },
    async syncRun(input, runOptions: RunOptions, owner) {
      const app = await startTransient(input, runOptions, owner, true);
      const processUuid = app.runtime.uuids[0];
      let exitCode: number | undefined;
      await new Promise<void>((resolve) => {
        const off = supervisor.onEvent((event) => {
          if (event.app !== app.name) return;
          if (event.type === 'EXIT' && event.processUuid === processUuid) {
            exitCode = event.exitCode;
            off();
            resolve();
          } else if (event.type === 'REMOVED') {
            off();
            resolve();
          }
        });
        if (app.process === undefined && app.runtime.lastExitAt !== undefined) {
          // Already exited (spawn failure reported before we subscribed).
          exitCode = app.runtime.returnCode;
          off();
          resolve();
        }
      });
      // A timeout is a deliberate stop by the lifecycle; it is reported as "no exit code".
      const timedOut = app.lastStop === 'timeout';
      const chunks: Buffer[] = [];
      let position = 0;
      for (;;) {
        const chunk = await output.read(app.name, {
          position,
          index: 0,
          maxSize: undefined,
          processUuid,
          timeoutMs: 0,
        });
        if (chunk.output.length === 0) break;
        chunks.push(chunk.output);
        position = chunk.position;
      }
      await serial(app.name, () => removeNow(app)).catch((error: unknown) =>
        logger.error('syncrun cleanup failed', { app: app.name, error }),
      );
      return { output: Buffer.concat(chunks), exitCode: timedOut ? undefined : exitCode };
    },
    onEvent(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async detach() {
      if (detached) return;
      for (const app of apps.values()) {
        if (app.process !== undefined) startTicksOf(app.process);
        app.detach();
      }
      detached = true;
      health.close();
      limiter.close();
      if (adoptedTimer !== undefined) clearInterval(adoptedTimer);
      adoptedTimer = undefined;
      output.close(); // first: no size-cap release may follow the snapshot's final write
      await snapshot.close();
      await store.close();
      runner.close?.(); // the spawner keeps the processes (and their exits) for the next daemon
    },
    processKey(name) {
      const uuid = apps.get(name)?.runtime.uuids[0];
      return uuid === undefined ? undefined : keyOf(uuid);
    },
    verifyProcessKey(name, key) {
      const app = apps.get(name);
      if (app === undefined || !/^[0-9a-f]{64}$/.test(key)) return 'unknown';
      const given = Buffer.from(key, 'hex');
      for (const [i, uuid] of app.runtime.uuids.entries()) {
        if (timingSafeEqual(given, keyBytesOf(uuid))) return i === 0 ? 'ok' : 'superseded';
      }
      return 'unknown';
    },
    state(name) {
      return apps.get(name)?.state;
    },
    cluster: clusterApps,
    spawner() {
      if (runner.kind === 'native')
        return {
          kind: 'native',
          pid: (runner as SpawnerRunner).spawnerPid() || undefined,
          reason: undefined,
        };
      return { kind: 'inprocess', pid: undefined, reason: spawnerReason };
    },
  };

  async function startTransient(
    input: unknown,
    runOptions: RunOptions,
    owner: string,
    sync: boolean,
  ): Promise<AppLifecycle> {
    const t = now();
    const def = transientDefinition(input, (name) => apps.get(name)?.def, owner, t);
    refuseReservedName(def.name);
    const lifecycle =
      Number.isFinite(runOptions.lifecycleSeconds) && runOptions.lifecycleSeconds >= 0
        ? runOptions.lifecycleSeconds
        : DEFAULT_RUN_LIFECYCLE_SECONDS;
    let timeout =
      Number.isFinite(runOptions.timeoutSeconds) && runOptions.timeoutSeconds > 0
        ? runOptions.timeoutSeconds
        : 0;
    if (sync && timeout === 0) timeout = DEFAULT_SYNC_RUN_TIMEOUT_SECONDS;
    return serial(def.name, async () => {
      // As in register: the durable write runs while the process is spawned, the call returns
      // after both, and a failed write undoes the start. Not for syncrun: it subscribes to the
      // app's exit only once this returns, and a process that exited meanwhile would already be
      // on its way out (its transient lifetime starts at the exit), output files and all.
      const saved = store.save(def);
      saved.catch(() => undefined);
      if (sync) await saved;
      const app = new AppLifecycle(def, host);
      app.markTransient({
        lifecycleSeconds: lifecycle,
        timeoutAt: timeout > 0 ? t + timeout * 1000 : undefined,
      });
      apps.set(def.name, app);
      sources.set(def.name, 'local');
      output.restore(def.name, undefined);
      app.decide();
      try {
        await saved;
      } catch (error) {
        await removeNow(app, false);
        throw error;
      }
      snapshot.schedule();
      return app;
    });
  }

  return supervisor;
}
