// Start-up: load the definitions (bundled system apps, registered apps), restore each app's
// runtime from the snapshot, re-attach to the processes that outlived the previous daemon (held by
// svc-spawner, else polled), recover orphans (orphan-recovery.ts), then decide every app. Nothing
// here runs again after start-up.
import { join } from 'node:path';
import type { Logger } from '../log/logger.ts';
import type { SecretCrypter } from '../model/secret-crypter.ts';
import type { AppStore } from './app-store.ts';
import { loadStartupDefinitions, startupSource, type StartupSources } from './definition-sources.ts';
import type { AdoptedHook } from './hooks/adopted.ts';
import type { RunningProcess } from './lifecycle.ts';
import { recoverHeld, recoverOrphans } from './orphan-recovery.ts';
import type { OutputStore } from './output-store.ts';
import { isSameProcess } from './proc-stats.ts';
import type { ProcessRunner } from './process-runner.ts';
import type { AppRegistry } from './registry.ts';
import { readSnapshot, type SnapshotData, type SnapshotWriter } from './snapshot.ts';

export interface StartupContext {
  sources: StartupSources;
  workDir: string;
  store: AppStore;
  crypter: SecretCrypter;
  registry: AppRegistry;
  runner: ProcessRunner;
  output: OutputStore;
  adopted: Pick<AdoptedHook, 'watch'>;
  snapshot: Pick<SnapshotWriter, 'schedule'>;
  keyOf: (uuid: string) => string;
  stopGraceMs: number;
  now: () => number;
  logger: Logger;
}

/** Every app loaded, re-attached or recovered, and decided. */
export async function startApps(context: StartupContext): Promise<void> {
  const { registry, logger } = context;
  const loaded = await loadStartupDefinitions(context.sources, context.store, context.crypter, logger);
  const previous = await readSnapshot(join(context.workDir, '.snapshot'), logger);
  for (const def of loaded) {
    const saved = previous?.apps[def.name];
    const app = registry.add(def, startupSource(def), saved?.outputs);
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
  const contradicted = reattach(context, previous);
  recoverOrphans({
    apps: registry.apps,
    workDir: context.workDir,
    previous,
    contradicted,
    keyOf: context.keyOf,
    runner: context.runner,
    stopGraceMs: context.stopGraceMs,
    output: context.output,
    watchAdopted: (app) => context.adopted.watch(app),
    now: context.now,
    logger,
  });
  recoverHeld({
    apps: registry.apps,
    previous,
    runner: context.runner,
    output: context.output,
    now: context.now,
    logger,
  });
  context.runner.settle?.();
  for (const app of registry.apps.values()) app.decide();
  // System apps are part of svc itself: a new daemon runs them anew (new code, configuration and
  // credentials re-read, e.g. a pending administrator password), so an adopted system process is
  // replaced by a deliberate stop and a fresh start. User apps are kept running.
  for (const app of registry.apps.values()) {
    const p = app.process;
    if (!app.def.system || p === undefined || (!p.adopted && p.reattached !== true)) continue;
    logger.info('restarting a system app adopted from the previous daemon', { app: app.name });
    void registry.serial(app.name, async () => {
      await app.stop('replace');
      registry.rerun(app);
    });
  }
  context.snapshot.schedule();
}

/**
 * The snapshot's processes: re-attached when svc-spawner holds them or /proc shows the recorded
 * start time. Returns `pid/uuid` of the entries refused for a start-time mismatch (see recoverOrphans).
 */
function reattach(context: StartupContext, previous: SnapshotData | undefined): Set<string> {
  const { registry, runner, logger } = context;
  const contradicted = new Set<string>();
  for (const entry of previous?.processes ?? []) {
    const app = registry.apps.get(entry.app);
    const held = app === undefined ? undefined : runner.claim?.(entry.processUuid);
    if (app !== undefined && held !== undefined) {
      // svc-spawner held it while no daemon ran: its exit (maybe already past) has its real code.
      app.adoptHeld({ ...entry, adopted: false }, held);
      logger.info('re-attached to process held by svc-spawner', { app: entry.app, pid: entry.pid });
    } else if (app !== undefined && isSameProcess(entry.pid, entry.startTicks)) {
      const process: RunningProcess = { ...entry, adopted: true };
      app.adopt(process);
      context.adopted.watch(app);
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
  return contradicted;
}
