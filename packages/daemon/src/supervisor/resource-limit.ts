// resource_limit {memory_mb, memory_virt_mb, cpu_shares} through cgroups, v2 or v1. Probed once
// when the supervisor starts:
// - v2: the cgroup root is a cgroup2 mount with the memory and cpu controllers, writable, and they
//   can be delegated to <root>/svc.<scope>; each app gets <root>/svc.<scope>/<app> with
//   memory.max, memory.swap.max (memory_virt_mb − memory_mb) and cpu.weight (shares scaled).
// - v1 (one hierarchy per controller, e.g. /sys/fs/cgroup/memory and /sys/fs/cgroup/cpu): each app
//   gets <controller mount><the daemon's own cgroup>/svc.<scope>/<app> in the memory and the cpu
//   hierarchy, with memory.limit_in_bytes, memory.memsw.limit_in_bytes (memory_virt_mb, when the
//   kernel accounts swap) and cpu.shares. Nested in the daemon's own cgroup, so apps stay inside
//   whatever limits the daemon itself runs under.
// Neither writable: every app with a resource_limit reports `resource_limit_status:
// "unsupported: <reasons>"` and a warning is logged — never silently ignored.
//
// `<scope>` is derived from the work directory, so two installations (or test daemons) on one
// host never share or clean up each other's cgroups. The pid is moved into the cgroups right after
// spawn (children it forks afterwards inherit them). A process killed by the kernel for exceeding
// its memory limit is recognised by the cgroup's oom_kill counter (`exitReason`, read before
// `release`), and every app cgroup is removed after its process exits, on delete, and (empty
// leftovers) at start-up and shutdown; the installation's directory exists only while in use.
import { createHash } from 'node:crypto';
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../log/logger.ts';

export interface ResourceLimit {
  memory_mb?: number | undefined;
  /** Memory plus swap (App Mesh `memory_virt_mb`). */
  memory_virt_mb?: number | undefined;
  cpu_shares?: number | undefined;
}

export interface ResourceLimiter {
  /** 'supported' or 'unsupported: <reason>'. */
  readonly status: string;
  /** 'cgroup v1', 'cgroup v2' or undefined when unsupported. */
  readonly version: string | undefined;
  /** Apply limits to a freshly spawned pid; returns the status to report for the app. */
  apply(app: string, pid: number, limit: ResourceLimit): string;
  /**
   * Make the app's cgroups and write their limits, before a spawn whose child writes itself into
   * `procs` (the cgroup.procs files) before exec: svc-spawner's child path. `procs` is empty when
   * nothing could be prepared (then `status` says why).
   */
  prepare(app: string, limit: ResourceLimit): { status: string; procs: string[] };
  /** Why the app's last process ended when a limit ended it (the kernel's OOM kill), else undefined. */
  exitReason(app: string): string | undefined;
  /** Remove the app's cgroups (best effort; fails harmlessly while processes remain). */
  release(app: string): void;
  /** The app's cgroup directories (for tests and diagnostics); [] when none. */
  cgroupDirs(app: string): string[];
  /** Daemon shutdown: remove empty app cgroups, and the installation's directory when empty. */
  close(): void;
}

export const DEFAULT_CGROUP_ROOT = '/sys/fs/cgroup';
const MIB = 1024 * 1024;

/** cpu_shares (cgroup v1 scale, default 1024) to cpu.weight (v2 scale 1..10000, default 100). */
export function cpuSharesToWeight(shares: number): number {
  return Math.min(10_000, Math.max(1, Math.round((shares * 100) / 1024)));
}

/** The per-installation directory name under which app cgroups live. */
export function cgroupScope(workDir: string): string {
  return `svc.${createHash('sha256').update(workDir).digest('hex').slice(0, 12)}`;
}

/** What a controller layout does; the limiter around it is the same for v1 and v2. */
interface Layout {
  version: string;
  /** Directories holding the app cgroups (one per hierarchy); they exist only while in use. */
  bases: string[];
  /** Create the bases (before an app's cgroups are made in them). */
  prepare(): void;
  /** Write the limits into the app's directories (already created). */
  write(dirs: string[], limit: ResourceLimit): void;
  /** The cgroup.procs files of the app's directories (a pid written there moves into the cgroup). */
  procs(dirs: string[]): string[];
  /** The OOM kills recorded in the app's cgroup. */
  oomKills(dirs: string[]): number;
}

function readKey(file: string, key: string): number {
  try {
    const line = readFileSync(file, 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${key} `));
    return line === undefined ? 0 : Number(line.slice(key.length + 1)) || 0;
  } catch {
    return 0;
  }
}

function controllers(file: string): Set<string> {
  return new Set(readFileSync(file, 'utf8').trim().split(/\s+/).filter(Boolean));
}

function probeV2(root: string, scope: string): Layout | string {
  let available: Set<string>;
  try {
    available = controllers(join(root, 'cgroup.controllers'));
  } catch {
    return `${root} is not a cgroup v2 mount`;
  }
  for (const needed of ['memory', 'cpu']) {
    if (!available.has(needed)) return `cgroup v2: controller ${needed} not available in ${root}`;
  }
  try {
    accessSync(root, constants.W_OK);
    // Delegate the controllers to <root>/<scope> and from there to each app's cgroup.
    writeFileSync(join(root, 'cgroup.subtree_control'), '+memory +cpu');
    const base = join(root, scope);
    mkdirSync(base, { recursive: true });
    writeFileSync(join(base, 'cgroup.subtree_control'), '+memory +cpu');
    const delegated = controllers(join(base, 'cgroup.subtree_control'));
    if (!delegated.has('memory') || !delegated.has('cpu'))
      return 'cgroup v2: memory/cpu controllers cannot be delegated';
    return {
      version: 'cgroup v2',
      bases: [base],
      prepare() {
        mkdirSync(base, { recursive: true });
        writeFileSync(join(base, 'cgroup.subtree_control'), '+memory +cpu');
      },
      procs: ([dir]) => [join(dir as string, 'cgroup.procs')],
      write([dir], limit) {
        const d = dir as string;
        const memory = limit.memory_mb === undefined ? undefined : Math.floor(limit.memory_mb * MIB);
        writeFileSync(join(d, 'memory.max'), memory === undefined ? 'max' : String(memory));
        if (existsSync(join(d, 'memory.swap.max'))) {
          const swap =
            limit.memory_virt_mb === undefined
              ? 'max'
              : String(Math.max(0, Math.floor(limit.memory_virt_mb * MIB) - (memory ?? 0)));
          writeFileSync(join(d, 'memory.swap.max'), swap);
        }
        writeFileSync(join(d, 'cpu.weight'), String(cpuSharesToWeight(limit.cpu_shares ?? 1024)));
      },
      oomKills: ([dir]) => readKey(join(dir as string, 'memory.events'), 'oom_kill'),
    };
  } catch (error) {
    return `cgroup v2: cannot delegate memory/cpu controllers: ${(error as Error).message}`;
  }
}

/** The daemon's own cgroup path in the v1 hierarchy of `controller` (from /proc/self/cgroup). */
function ownPath(controller: string): string {
  try {
    for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
      const [, list, path] = line.split(':');
      if (list !== undefined && path !== undefined && list.split(',').includes(controller)) return path;
    }
  } catch {
    // not Linux
  }
  return '/';
}

function probeV1(root: string, scope: string): Layout | string {
  const bases: string[] = [];
  for (const [controller, file] of [
    ['memory', 'memory.limit_in_bytes'],
    ['cpu', 'cpu.shares'],
  ] as const) {
    const mount = join(root, controller);
    if (!existsSync(join(mount, file))) return `cgroup v1: no ${controller} hierarchy at ${mount}`;
    // Inside the daemon's own cgroup when that is visible here (not in another namespace's view).
    const own = join(mount, ownPath(controller));
    const base = join(existsSync(join(own, file)) ? own : mount, scope);
    try {
      mkdirSync(base, { recursive: true });
      accessSync(join(base, 'cgroup.procs'), constants.W_OK);
    } catch (error) {
      return `cgroup v1: ${controller} hierarchy not writable: ${(error as Error).message}`;
    }
    bases.push(base);
  }
  return {
    version: 'cgroup v1',
    bases,
    prepare() {
      for (const base of bases) mkdirSync(base, { recursive: true });
    },
    procs: ([memoryDir, cpuDir]) => [join(memoryDir as string, 'cgroup.procs'), join(cpuDir as string, 'cgroup.procs')],
    write([memoryDir, cpuDir], limit) {
      const m = memoryDir as string;
      const swapAccounted = existsSync(join(m, 'memory.memsw.limit_in_bytes'));
      // memory+swap must stay >= memory: lift it first, then set both.
      if (swapAccounted) writeFileSync(join(m, 'memory.memsw.limit_in_bytes'), '-1');
      writeFileSync(
        join(m, 'memory.limit_in_bytes'),
        limit.memory_mb === undefined ? '-1' : String(Math.floor(limit.memory_mb * MIB)),
      );
      if (swapAccounted && limit.memory_virt_mb !== undefined)
        writeFileSync(join(m, 'memory.memsw.limit_in_bytes'), String(Math.floor(limit.memory_virt_mb * MIB)));
      writeFileSync(join(cpuDir as string, 'cpu.shares'), String(Math.max(2, limit.cpu_shares ?? 1024)));
    },
    oomKills: ([memoryDir]) => readKey(join(memoryDir as string, 'memory.oom_control'), 'oom_kill'),
  };
}

/** Remove the installation's (empty) directories: they are created again when needed. */
function removeBases(bases: readonly string[]): void {
  for (const base of bases) {
    try {
      rmdirSync(base);
    } catch {
      // an app cgroup in it is in use
    }
  }
}

/** Remove the empty app cgroups a previous daemon of this installation left behind. */
function removeLeftovers(bases: readonly string[]): void {
  for (const base of bases) {
    let entries: string[];
    try {
      entries = readdirSync(base, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      continue;
    }
    for (const name of entries) {
      try {
        rmdirSync(join(base, name));
      } catch {
        // still populated: a process that outlived the previous daemon (re-attached)
      }
    }
  }
}

/**
 * Probe the cgroup root once (v2, else v1); the result is logged and reported per app. `workDir`
 * names the installation (see cgroupScope).
 */
export function probeResourceLimiter(
  logger: Logger,
  root = DEFAULT_CGROUP_ROOT,
  workDir = '',
): ResourceLimiter {
  const scope = cgroupScope(workDir);
  const v2 = probeV2(root, scope);
  const layout = typeof v2 === 'string' ? probeV1(root, scope) : v2;
  if (typeof layout === 'string') {
    const reason = typeof v2 === 'string' ? `${v2}; ${layout}` : layout;
    logger.warn('resource limits unsupported', { reason, cgroup_root: root });
    return unsupported(`unsupported: ${reason}`, logger);
  }
  removeLeftovers(layout.bases);
  removeBases(layout.bases); // made again by the first apply: no empty directory left behind
  logger.info(`resource limits through ${layout.version}`, { cgroups: layout.bases });
  const applied = new Map<string, { oomBaseline: number; memoryMb: number | undefined }>();
  const dirsOf = (app: string): string[] => layout.bases.map((base) => join(base, app));
  return {
    status: 'supported',
    version: layout.version,
    apply(app, pid, limit) {
      const dirs = dirsOf(app);
      try {
        layout.prepare();
        for (const dir of dirs) mkdirSync(dir, { recursive: true });
        layout.write(dirs, limit);
        for (const procs of layout.procs(dirs)) writeFileSync(procs, String(pid));
        applied.set(app, { oomBaseline: layout.oomKills(dirs), memoryMb: limit.memory_mb });
        return 'applied';
      } catch (error) {
        logger.warn('resource limit not applied', { app, error });
        return `failed: ${(error as Error).message}`;
      }
    },
    prepare(app, limit) {
      const dirs = dirsOf(app);
      try {
        layout.prepare();
        for (const dir of dirs) mkdirSync(dir, { recursive: true });
        layout.write(dirs, limit);
        applied.set(app, { oomBaseline: layout.oomKills(dirs), memoryMb: limit.memory_mb });
        return { status: 'applied', procs: layout.procs(dirs) };
      } catch (error) {
        logger.warn('resource limit not applied', { app, error });
        return { status: `failed: ${(error as Error).message}`, procs: [] };
      }
    },
    exitReason(app) {
      const state = applied.get(app);
      if (state === undefined) return undefined;
      if (layout.oomKills(dirsOf(app)) <= state.oomBaseline) return undefined;
      const limit = state.memoryMb === undefined ? '' : ` (resource_limit.memory_mb ${state.memoryMb})`;
      return `killed by the kernel: out of memory in its cgroup${limit}`;
    },
    release(app) {
      applied.delete(app);
      for (const dir of dirsOf(app)) {
        try {
          rmdirSync(dir);
        } catch {
          // Still populated (a descendant that outlived the process) or already gone.
        }
      }
      if (applied.size === 0) removeBases(layout.bases);
    },
    cgroupDirs(app) {
      return dirsOf(app).filter((dir) => existsSync(dir));
    },
    close() {
      removeLeftovers(layout.bases);
      removeBases(layout.bases); // kept while an app cgroup holds a process that outlives svcd
    },
  };
}

function unsupported(status: string, logger: Logger): ResourceLimiter {
  const warned = new Set<string>();
  return {
    status,
    version: undefined,
    apply(app) {
      if (!warned.has(app)) {
        warned.add(app);
        logger.warn('resource_limit of app not enforced', { app, status });
      }
      return status;
    },
    prepare(app) {
      if (!warned.has(app)) {
        warned.add(app);
        logger.warn('resource_limit of app not enforced', { app, status });
      }
      return { status, procs: [] };
    },
    exitReason: () => undefined,
    release(app) {
      warned.delete(app);
    },
    cgroupDirs: () => [],
    close: () => undefined,
  };
}
