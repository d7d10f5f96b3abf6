// `depends_on`: when an application may start, and which registrations are refused. Pure functions
// over a view of the other applications; the supervisor re-evaluates waiting apps whenever another
// app starts, exits, changes health, is enabled, disabled, registered or removed.
//
// An app starts only when every name in its depends_on is registered, enabled, running and
// healthy. Until then it waits (`waiting_for` lists the unmet names). A dependency that stops
// later does not stop the dependent: it keeps running, but is not (re)started by a restart,
// schedule or enable until every dependency is satisfied again.

/** What the dependency check needs to know of another application. */
export interface DependencyState {
  enabled: boolean;
  running: boolean;
  /** 0 healthy, 1 unhealthy (the app's `health`). */
  health: 0 | 1;
}

/** The names of `dependsOn` that are not satisfied now, in their declared order. */
export function unmetDependencies(
  dependsOn: readonly string[],
  lookup: (name: string) => DependencyState | undefined,
): string[] {
  return dependsOn.filter((name) => {
    const state = lookup(name);
    return state === undefined || !state.enabled || !state.running || state.health !== 0;
  });
}

/**
 * A dependency cycle that registering `name` with `dependsOn` would close, as the path
 * `[name, …, name]`, or undefined. `edges` gives the depends_on of the other registered apps
 * (undefined for a name not registered: a dependency may be registered later).
 */
export function findDependencyCycle(
  name: string,
  dependsOn: readonly string[],
  edges: (name: string) => readonly string[] | undefined,
): string[] | undefined {
  const next = (node: string): readonly string[] => (node === name ? dependsOn : (edges(node) ?? []));
  // Iterative search from `name` (each app visited once): a way back to `name` is the cycle,
  // rebuilt from the parent links.
  const parent = new Map<string, string>();
  const stack: string[] = [name];
  while (stack.length > 0) {
    const node = stack.pop()!;
    for (const dependency of next(node)) {
      if (dependency === name) {
        const path = [name];
        for (let at: string | undefined = node; at !== undefined && at !== name; at = parent.get(at))
          path.unshift(at);
        return [name, ...path];
      }
      if (parent.has(dependency)) continue;
      parent.set(dependency, node);
      stack.push(dependency);
    }
  }
  return undefined;
}
