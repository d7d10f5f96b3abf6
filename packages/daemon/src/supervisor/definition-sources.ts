// Where the supervisor's application definitions come from. Three sources feed one registry of apps:
//
//   system   bundled apps/*.yaml of the install (trusted, never stored, changed by nobody)
//   local    work/apps/<name>.yaml, registered through the API of this node
//   cluster  svc/cluster/tasks/<name> in the registry, placed on this node by the leader's topology
//            and applied by the cluster worker (cluster/placement-follower.ts); never stored on this node
//
// Each app has exactly one source. An app of one source never replaces an app of another: the
// bundled one shadows a stored one of the same name at load, a local app keeps its name against a
// cluster placement (the worker reports the conflict), and local API changes of a system or cluster
// app are refused.
import { SvcError } from '@svc/protocol';
import type { Logger } from '../log/logger.ts';
import type { AppDefinition } from '../model/app-definition.ts';
import type { SecretCrypter } from '../model/secret-crypter.ts';
import { AppStore } from './app-store.ts';

export type DefinitionSource = 'system' | 'local' | 'cluster';

export interface StartupSources {
  /** Directory of bundled system apps (*.yaml, loaded trusted). */
  bundledAppsDir?: string | undefined;
  /** Bundled apps not to load (e.g. `identity` in external auth mode). */
  skipBundled?: ((name: string) => boolean) | undefined;
  /** Working directory of a bundled system app that names none (the install root). */
  systemCwd?: string | undefined;
}

/**
 * The definitions present at start-up: bundled system apps first, then the locally registered ones
 * that no system app shadows. Cluster apps come later, from the worker, once the registry answers.
 */
export async function loadStartupDefinitions(
  sources: StartupSources,
  store: AppStore,
  crypter: SecretCrypter,
  logger: Logger,
): Promise<AppDefinition[]> {
  const loaded: AppDefinition[] = [];
  if (sources.bundledAppsDir !== undefined) {
    const bundled = await new AppStore(sources.bundledAppsDir, crypter, { trusted: true }).loadAll();
    for (const error of bundled.errors) logger.error('bundled application file rejected', error);
    const wanted = bundled.apps.filter((def) => sources.skipBundled?.(def.name) !== true);
    for (const def of wanted) {
      def.system = true;
      if (def.working_dir === undefined && sources.systemCwd !== undefined)
        def.working_dir = sources.systemCwd;
    }
    loaded.push(...wanted);
  }
  const stored = await store.loadAll();
  for (const error of stored.errors) logger.error('application file rejected (left in place)', error);
  for (const entry of stored.migrated) {
    if (entry.error === undefined)
      logger.info('application file rewritten with App Mesh 3.0 field names', entry);
    else logger.error('application file of the old shape could not be rewritten (still loaded)', entry);
  }
  const names = new Set(loaded.map((def) => def.name));
  for (const def of stored.apps) {
    if (names.has(def.name))
      logger.warn('registered app shadowed by a bundled system app', { app: def.name });
    else loaded.push(def);
  }
  return loaded;
}

/** The source of a loaded definition (system apps carry `system`; the rest were stored locally). */
export const startupSource = (def: AppDefinition): DefinitionSource => (def.system ? 'system' : 'local');

/** The message of every local change refused for a cluster app. */
export function clusterManaged(name: string): SvcError {
  return new SvcError(
    'conflict',
    `${name} is managed by the cluster; use /svc/cluster/app/${name} to change or remove it`,
  );
}

/**
 * Refuses a change through this node's API of an app whose definition another source owns: system
 * apps (403 system_app) and cluster apps (409 conflict).
 */
export function refuseForeignChange(name: string, source: DefinitionSource | undefined, what: string): void {
  if (source === 'system')
    throw new SvcError('system_app', `${name} is a system application and cannot be ${what} through the API`);
  if (source === 'cluster') throw clusterManaged(name);
}
