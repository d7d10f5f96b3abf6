// The cluster source of definitions (definition-sources.ts): what the cluster worker applies and
// withdraws. A cluster app is supervised like any other (visible in `svc ls` with `cluster: true`)
// but not stored on this node (the registry holds its definition) and not changed through this
// node's app API. A local or system app of the same name is never replaced: the placement is
// reported as a conflict (log and the local app's view, field `cluster_conflict`).
import { SvcError } from '@svc/protocol';
import type { Logger } from '../log/logger.ts';
import { parseAppDefinition, type AppDefinition } from '../model/app-definition.ts';
import type { DefinitionSource } from './definition-sources.ts';
import type { AppRegistry } from './registry.ts';

export type ApplyOutcome = 'started' | 'replaced' | 'unchanged' | 'conflict';

export interface ClusterApps {
  /**
   * Runs the cluster task `name` with the application definition `content` (its `name`, if any,
   * must be `name`) on behalf of `owner` (the principal that defined the task; its execution user
   * applies). Idempotent: the same content again is `unchanged`. Throws invalid_app for a bad one.
   */
  apply(name: string, content: Record<string, unknown>, owner: string | undefined): Promise<ApplyOutcome>;
  /** Stops and removes the cluster app `name`; false when there was none. */
  withdraw(name: string): Promise<boolean>;
  /** Names of the cluster apps this node runs. */
  names(): string[];
  /** Why a placement of `name` is not applied here (a local app of that name), if it is not. */
  conflict(name: string): string | undefined;
}

export interface ClusterAppsHost {
  logger: Logger;
  now(): number;
  sourceOf(name: string): DefinitionSource | undefined;
  /**
   * Installs (new or replacing a cluster app of that name) without storing it; serialized with
   * every other change of the app. Answers `conflict` (nothing done) when by then the name belongs
   * to another source.
   */
  install(def: AppDefinition): Promise<'started' | 'replaced' | 'conflict'>;
  /** Removes the cluster app (serialized); false when the name is not (or no longer) a cluster app. */
  remove(name: string): Promise<boolean>;
}

/** JSON with every object's keys sorted: equal for equal contents whatever their key order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'object' && v !== null && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

export function createClusterApps(host: ClusterAppsHost): ClusterApps {
  /** The content last applied per cluster app, canonical JSON (an unchanged task is left alone). */
  const applied = new Map<string, string>();
  const conflicts = new Map<string, string>();

  const noteConflict = (name: string): ApplyOutcome => {
    const message = `a cluster task named ${name} is placed on this node, but a ${host.sourceOf(name) ?? 'local'} application of that name exists here: the local one is kept and the task does not run here`;
    if (conflicts.get(name) !== message)
      host.logger.warn('cluster placement refused', { app: name, message });
    conflicts.set(name, message);
    return 'conflict';
  };

  return {
    async apply(name, content, owner) {
      if (content['name'] !== undefined && content['name'] !== name)
        throw new SvcError('invalid_app', `name: the content's name does not match the task name "${name}"`);
      const input: Record<string, unknown> = { ...content, name };
      if (input['pid'] !== undefined)
        throw new SvcError('invalid_app', 'pid: a cluster application cannot adopt a process of one node');
      const source = host.sourceOf(name);
      if (source !== undefined && source !== 'cluster') return noteConflict(name);
      const canonical = canonicalJson([input, owner ?? null]);
      if (source === 'cluster' && applied.get(name) === canonical) return 'unchanged';
      const def = parseAppDefinition(input, { now: host.now() });
      if (owner !== undefined) def.owner_principal_id = owner;
      const outcome = await host.install(def);
      if (outcome === 'conflict') return noteConflict(name);
      conflicts.delete(name);
      applied.set(name, canonical);
      return outcome;
    },
    async withdraw(name) {
      conflicts.delete(name);
      applied.delete(name);
      return host.remove(name);
    },
    names() {
      return [...applied.keys()].filter((name) => host.sourceOf(name) === 'cluster');
    },
    conflict(name) {
      return conflicts.get(name);
    },
  };
}

/**
 * The cluster source over the registry: a placement installs (or replaces) a cluster app and never
 * an app of another source (`conflict`), serialized with every other change of that app.
 */
export function clusterSource(registry: AppRegistry, logger: Logger, now: () => number): ClusterApps {
  return createClusterApps({
    logger,
    now,
    sourceOf: (name) => registry.sourceOf(name),
    install: (def) =>
      registry.serial(def.name, async () => {
        const existing = registry.apps.get(def.name);
        if (existing !== undefined && registry.sourceOf(def.name) !== 'cluster') return 'conflict';
        await registry.install({ def, source: 'cluster' }, existing);
        return existing === undefined ? 'started' : 'replaced';
      }),
    remove: (name) =>
      registry.serial(name, async () => {
        const app = registry.apps.get(name);
        if (app === undefined || registry.sourceOf(name) !== 'cluster') return false;
        await registry.removeNow(app);
        return true;
      }),
  });
}
