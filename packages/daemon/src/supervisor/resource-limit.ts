// resource_limit {memory_mb, cpu_shares} through cgroup v2. Probed once when the supervisor
// starts: supported only when the cgroup root is a writable cgroup2 mount whose memory and cpu
// controllers can be delegated to <root>/svc. Otherwise every app with a resource_limit reports
// `resource_limit_status: "unsupported: <reason>"` and a warning is logged — never silently ignored.
//
// Layout: <root>/svc/<app name>/ with memory.max and cpu.weight; the pid is moved into
// cgroup.procs right after spawn (children it forks afterwards inherit the cgroup).
import { accessSync, constants, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../log/logger.ts';

export interface ResourceLimit {
  memory_mb?: number | undefined;
  cpu_shares?: number | undefined;
}

export interface ResourceLimiter {
  /** 'supported' or 'unsupported: <reason>'. */
  readonly status: string;
  /** Apply limits to a freshly spawned pid; returns the status to report for the app. */
  apply(app: string, pid: number, limit: ResourceLimit): string;
  /** Remove the app's cgroup (best effort; fails harmlessly while processes remain). */
  release(app: string): void;
}

export const DEFAULT_CGROUP_ROOT = '/sys/fs/cgroup';

/** cpu_shares (cgroup v1 scale, default 1024) to cpu.weight (v2 scale 1..10000, default 100). */
export function cpuSharesToWeight(shares: number): number {
  return Math.min(10_000, Math.max(1, Math.round((shares * 100) / 1024)));
}

function controllers(file: string): Set<string> {
  return new Set(readFileSync(file, 'utf8').trim().split(/\s+/).filter(Boolean));
}

/** Probe the cgroup root once; the result is logged and reported per app. */
export function probeResourceLimiter(logger: Logger, root = DEFAULT_CGROUP_ROOT): ResourceLimiter {
  const reason = probe(root);
  if (reason !== undefined) {
    logger.warn('resource limits unsupported', { reason, cgroup_root: root });
    return unsupported(`unsupported: ${reason}`, logger);
  }
  const base = join(root, 'svc');
  logger.info('resource limits through cgroup v2', { cgroup: base });
  return {
    status: 'supported',
    apply(app, pid, limit) {
      const dir = join(base, app);
      try {
        mkdirSync(dir, { recursive: true });
        writeFileSync(
          join(dir, 'memory.max'),
          limit.memory_mb === undefined ? 'max' : String(Math.floor(limit.memory_mb * 1024 * 1024)),
        );
        writeFileSync(join(dir, 'cpu.weight'), String(cpuSharesToWeight(limit.cpu_shares ?? 1024)));
        writeFileSync(join(dir, 'cgroup.procs'), String(pid));
        return 'applied';
      } catch (error) {
        logger.warn('resource limit not applied', { app, error });
        return `failed: ${(error as Error).message}`;
      }
    },
    release(app) {
      try {
        rmdirSync(join(base, app));
      } catch {
        // Still populated (an adopted or stray process) or already gone.
      }
    },
  };
}

function probe(root: string): string | undefined {
  let available: Set<string>;
  try {
    available = controllers(join(root, 'cgroup.controllers'));
  } catch {
    return `${root} is not a cgroup v2 mount (no cgroup.controllers)`;
  }
  for (const needed of ['memory', 'cpu']) {
    if (!available.has(needed)) return `controller ${needed} not available in ${root}`;
  }
  try {
    accessSync(root, constants.W_OK);
  } catch {
    return `${root} is not writable`;
  }
  try {
    // Delegate the controllers to <root>/svc and from there to each app's cgroup.
    writeFileSync(join(root, 'cgroup.subtree_control'), '+memory +cpu');
    const base = join(root, 'svc');
    mkdirSync(base, { recursive: true });
    writeFileSync(join(base, 'cgroup.subtree_control'), '+memory +cpu');
    const delegated = controllers(join(base, 'cgroup.subtree_control'));
    if (!delegated.has('memory') || !delegated.has('cpu'))
      return 'memory/cpu controllers cannot be delegated';
  } catch (error) {
    return `cannot delegate memory/cpu controllers: ${(error as Error).message}`;
  }
  return undefined;
}

function unsupported(status: string, logger: Logger): ResourceLimiter {
  const warned = new Set<string>();
  return {
    status,
    apply(app) {
      if (!warned.has(app)) {
        warned.add(app);
        logger.warn('resource_limit of app not enforced', { app, status });
      }
      return status;
    },
    release(app) {
      warned.delete(app);
    },
  };
}
