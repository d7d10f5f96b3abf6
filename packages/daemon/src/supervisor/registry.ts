// The registry of apps: one AppLifecycle per name, the source of each definition, the per-app
// serial chain, the event listeners, and the steps every change shares (add, the one install
// path, removal). The API (supervisor.ts), start-up (startup.ts), runs (runs.ts), pid adoption
// (adopt-pid.ts) and the cluster source (cluster-apps.ts) all change apps through here.
//
// Mutations of one app are serialized through its promise chain; different apps never wait for
// each other. Nothing here is O(number of apps) on the start path.
import type { Logger } from '../log/logger.ts';
import type { AppDefinition } from '../model/app-definition.ts';
import type { AppStore } from './app-store.ts';
import type { DefinitionSource } from './definition-sources.ts';
import { unmetDependencies } from './dependencies.ts';
import type { LifecycleHook } from './hooks/hook.ts';
import { HookRunner } from './hooks/runner.ts';
import { AppLifecycle, type Clock, type LifecycleHost, type Transient } from './lifecycle.ts';
import type { OutputFileInfo, OutputStore } from './output-store.ts';
import type { ProcessRunner } from './process-runner.ts';
import type { SupervisorEvent } from './types.ts';

export interface RegistryOptions {
  runner: ProcessRunner;
  clock: Clock;
  stopGraceMs: number;
  /** In the order they run (see supervisor.ts). */
  hooks: readonly LifecycleHook[];
  signalExternal: LifecycleHost['signalExternal'];
  store: Pick<AppStore, 'save' | 'delete'>;
  output: Pick<OutputStore, 'restore'>;
  logger: Logger;
}

/** How a definition comes into force (AppRegistry.install). */
export interface Installation {
  def: AppDefinition;
  source: 'local' | 'cluster';
  /** run / syncrun: the new app is transient. */
  transient?: Transient | undefined;
  /**
   * Nothing runs or stops before the definition is durable (syncrun, pid adoption: a process is
   * never adopted, nor the old one stopped, for a definition whose write failed).
   */
  saveFirst?: boolean | undefined;
  /** How the app starts instead of `decide` (pid adoption: takes over the process). */
  begin?: ((app: AppLifecycle) => void) | undefined;
}

const noop = (): void => undefined;

export class AppRegistry {
  readonly apps = new Map<string, AppLifecycle>();
  /** Runs every app's hooks: the LifecycleHost of each AppLifecycle. */
  readonly host: HookRunner;
  /** Source of every app's definition (definition-sources.ts). */
  readonly #sources = new Map<string, DefinitionSource>();
  readonly #chains = new Map<string, Promise<unknown>>();
  readonly #listeners = new Set<(event: SupervisorEvent) => void>();
  readonly #store: RegistryOptions['store'];
  readonly #output: RegistryOptions['output'];
  readonly #logger: Logger;
  #dependentsWake: Promise<void> | undefined;

  constructor(options: RegistryOptions) {
    this.#store = options.store;
    this.#output = options.output;
    this.#logger = options.logger;
    this.host = new HookRunner({
      runner: options.runner,
      clock: options.clock,
      stopGraceMs: options.stopGraceMs,
      hooks: options.hooks,
      signalExternal: options.signalExternal,
      emit: (event) => this.emit(event),
      startBlocker: (app) => this.#startBlocker(app),
      requestRemoval: (app) => this.#requestRemoval(app),
    });
  }

  sourceOf(name: string): DefinitionSource | undefined {
    return this.#sources.get(name);
  }

  /** A new app in the registry (not started); `outputs`: its output files as the snapshot knew them. */
  add(def: AppDefinition, source: DefinitionSource, outputs?: readonly OutputFileInfo[]): AppLifecycle {
    const app = new AppLifecycle(def, this.host);
    this.apps.set(def.name, app);
    this.#sources.set(def.name, source);
    this.#output.restore(def.name, outputs);
    return app;
  }

  onEvent(listener: (event: SupervisorEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  emit(event: SupervisorEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (error) {
        this.#logger.error('event listener failed', { event: event.type, app: event.app, error });
      }
    }
    this.#wakeDependents();
  }

  /**
   * depends_on: after any start, exit, health, enable/disable or removal, apps waiting for a
   * dependency look again (once per turn of the event loop, however many events came).
   */
  #wakeDependents(): void {
    if (this.#dependentsWake !== undefined) return;
    this.#dependentsWake = Promise.resolve().then(() => {
      this.#dependentsWake = undefined;
      for (const app of this.apps.values()) if (app.state === 'waiting') app.decide();
    });
  }

  #startBlocker(app: AppLifecycle): ReturnType<LifecycleHost['startBlocker']> {
    if (app.def.docker_image !== undefined)
      return { error: 'docker_image: not supported, no container runtime is configured' };
    const waitingFor = unmetDependencies(app.def.depends_on, (name) => {
      const other = this.apps.get(name);
      if (other === undefined || other.state === 'removed') return undefined;
      return {
        enabled: other.def.enabled,
        running: other.state === 'running',
        health: other.computeHealth(),
      };
    });
    return waitingFor.length > 0 ? { waitingFor } : undefined;
  }

  /** Serialize mutations of one app. */
  serial<T>(name: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#chains.get(name) ?? Promise.resolve();
    const next = previous.then(task, task);
    const settled = next.then(noop, noop);
    this.#chains.set(name, settled);
    void settled.then(() => {
      if (this.#chains.get(name) === settled) this.#chains.delete(name);
    });
    return next;
  }

  /** The exit behavior `remove`, or a transient app's lifecycle ended. */
  #requestRemoval(app: AppLifecycle): void {
    void this.serial(app.name, () => this.removeNow(app)).catch((error: unknown) =>
      this.#logger.error('automatic removal failed', { app: app.name, error }),
    );
  }

  /**
   * Stops the app's process, publishes REMOVED, forgets the app and deletes its file.
   * `deleteFile` false: undo of an installation whose write failed (the file is as it was).
   */
  async removeNow(app: AppLifecycle, deleteFile = true): Promise<void> {
    if (app.state === 'removed') return;
    await app.stop('remove');
    // The stop publishes no EXIT (a waiter sees REMOVED alone); REMOVED comes first, then the
    // purge (subscriptions of the app are dropped on this event).
    this.emit({ type: 'REMOVED', app: app.name });
    app.markRemoved();
    this.apps.delete(app.name);
    const source = this.#sources.get(app.name);
    this.#sources.delete(app.name);
    this.host.removed(app);
    if (source === 'local' && deleteFile) await this.#store.delete(app.name);
    this.host.changed(app);
  }

  /**
   * Issue the durable write of a definition of `source` (only local ones are stored here); it is
   * in flight when this returns, and awaited by the caller (possibly after a stop: never "unhandled").
   */
  save(def: AppDefinition, source: DefinitionSource | undefined): Promise<void> {
    const saved = source === 'local' ? this.#store.save(def) : Promise.resolve();
    saved.catch(noop);
    return saved;
  }

  /** Await `saved`; if it failed, `undo` what was done meanwhile, then throw its error. */
  async durable(saved: Promise<void>, undo: () => void | Promise<void>): Promise<void> {
    try {
      await saved;
    } catch (error) {
      await undo();
      throw error;
    }
  }

  /** The app runs again (re-configured, enabled, restarted on request): crash history forgotten. */
  rerun(app: AppLifecycle): void {
    app.resetForRun();
    app.decide();
    this.host.changed(app);
  }

  /**
   * The one install path (register, replace, run, syncrun, a cluster placement, pid adoption):
   * starts a new app, or gives `existing` its new definition (its process stopped first). A local
   * definition is written durably and this returns only after that; a cluster one is not stored.
   * - A new app spawns while its write is in flight (the write is issued first). If the write
   *   fails, the start is undone (the app removed, its file left as it was) and the error thrown:
   *   no process may run that no definition on disk accounts for.
   * - A replacement spawns only once its definition is durable: a crash in between would otherwise
   *   leave the next daemon adopting (by its environment) a process of the unacknowledged
   *   definition while supervising it with the previous one. If the write fails, the previous
   *   definition (still on disk) runs again.
   */
  async install(installation: Installation, existing: AppLifecycle | undefined): Promise<AppLifecycle> {
    const { def, source } = installation;
    const saved = this.save(def, source);
    if (installation.saveFirst === true) await saved;
    const begin = installation.begin ?? ((app: AppLifecycle) => app.decide());
    if (existing === undefined) {
      const app = this.add(def, source);
      if (installation.transient !== undefined) app.markTransient(installation.transient);
      begin(app);
      await this.durable(saved, () => this.removeNow(app, false));
      return app;
    }
    await existing.stop('replace');
    await this.durable(saved, () => this.rerun(existing));
    existing.replace(def);
    existing.resetForRun();
    this.host.replaced(existing);
    begin(existing);
    this.host.changed(existing);
    return existing;
  }

  /**
   * Enable or disable `app` (nothing when it already is), its definition stored. Enabling spawns
   * while the write is in flight, disabling stops the process meanwhile; both end before this
   * returns. If the write fails, the change is undone (an enabled app's process stopped again, a
   * disabled one enabled again) and the error thrown. STATUS is published for a change that holds.
   */
  async setEnabled(app: AppLifecycle, enabled: boolean): Promise<void> {
    if (app.def.enabled === enabled) return;
    const name = app.name;
    const saved = this.save(app.setEnabled(enabled), this.#sources.get(name));
    if (enabled) {
      app.resetForRun();
      app.decide();
      await this.durable(saved, async () => {
        app.setEnabled(false);
        await app.stop('disable');
        app.decide();
      });
      this.emit({ type: 'STATUS', app: name, enabled: true, previousEnabled: false });
    } else {
      this.emit({ type: 'STATUS', app: name, enabled: false, previousEnabled: true });
      await app.stop('disable');
      app.decide();
      await this.durable(saved, () => {
        // Not stored: the app is still enabled on disk, so it is enabled again here.
        app.setEnabled(true);
        app.resetForRun();
        app.decide();
        this.emit({ type: 'STATUS', app: name, enabled: true, previousEnabled: false });
      });
    }
    this.host.changed(app);
  }
}
