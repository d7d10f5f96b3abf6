// Orphan recovery at start-up (README "Orphan recovery"): after the snapshot's re-attachments and
// before any app starts, processes svc started but the snapshot lost are found in /proc
// (orphans.ts) and adopted, stopped or left alone by the rules below.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pid as daemonPid } from 'node:process';
import { timingSafeEqual } from 'node:crypto';
import type { Logger } from '../log/logger.ts';
import type { AppLifecycle } from './lifecycle.ts';
import { environHasUuid, outputTargets, scanClaimingProcesses, type ClaimingProcess } from './orphans.ts';
import type { OutputStore } from './output-store.ts';
import type { ProcessRunner } from './process-runner.ts';
import { isSameProcess } from './proc-stats.ts';
import type { SnapshotData } from './snapshot.ts';

export interface OrphanRecoveryContext {
  apps: ReadonlyMap<string, AppLifecycle>;
  workDir: string;
  /** The snapshot the daemon started from. */
  previous: SnapshotData | undefined;
  /** `pid/uuid` of snapshot entries refused for a start-time mismatch. */
  contradicted: ReadonlySet<string>;
  /** The process key of a uuid (HMAC under this installation's secret). */
  keyOf: (uuid: string) => string;
  runner: ProcessRunner;
  stopGraceMs: number;
  output: OutputStore;
  watchAdopted: (app: AppLifecycle) => void;
  now: () => number;
  logger: Logger;
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The process key `key` was derived from `uuid` by this installation's secret. */
const keyVerifies = (uuid: string, key: string, keyOf: (uuid: string) => string): boolean =>
  UUID_PATTERN.test(uuid) &&
  /^[0-9a-f]{64}$/.test(key) &&
  timingSafeEqual(Buffer.from(key, 'hex'), Buffer.from(keyOf(uuid), 'hex'));

/** SIGTERM to the group, SIGKILL after the grace unless it is gone (or its pid reused). */
const stopStray = (
  context: OrphanRecoveryContext,
  claim: ClaimingProcess,
  what: 'duplicate' | 'stray',
  why: string,
): void => {
  const { logger, runner } = context;
  logger.warn(`stopping a ${what} process of ${claim.app} (deliberate stop): ${why}`, {
    app: claim.app,
    pid: claim.pid,
    processUuid: claim.processUuid,
  });
  runner.killGroup(claim.pid, 'SIGTERM');
  const timer = setTimeout(() => {
    if (isSameProcess(claim.pid, claim.startTicks)) runner.killGroup(claim.pid, 'SIGKILL');
  }, context.stopGraceMs);
  timer.unref();
};

/**
 * Orphan recovery, at start-up, after the snapshot's re-attachments and before any app is started:
 * a process whose start the snapshot lost (daemon crash within 50 ms of a spawn) is found in /proc
 * by its environment and adopted like a snapshot entry, so no second process is started for its
 * app. Only process-group leaders are considered (svc spawns each app detached in its own group);
 * the key (HMAC of the uuid under this installation's secret) proves svc started it. Rules:
 * - key does not verify: not ours (another installation, or forged): left alone (debug log);
 * - app not registered and no definition file (a registration whose write never completed, so
 *   never acknowledged; a delete or a transient run whose stop the crash cut short): stopped,
 *   warn — the key proves it is ours, and nothing may run that no definition accounts for;
 * - app not registered but its definition file exists (unreadable: named at load): left alone,
 *   warn — a file an operator can repair must never cost a running process;
 * - uuid of an adopted process: a descendant that made itself a group leader: left alone;
 * - pid and uuid of a snapshot entry refused for its start time: left alone (record corrupt);
 * - uuid the snapshot knows as superseded or exited (an older generation): a self-detached
 *   descendant of a process whose exit was recorded: left alone;
 * - parent carries the same uuid: a descendant that called setsid: left alone;
 * - per uuid the oldest leader is the process svc spawned (descendants started later);
 * - per app the newest claim is adopted, any other is stopped (SIGTERM to its group, SIGKILL
 *   after the grace), logged; when the app already re-attached to its snapshot process, that
 *   recorded process stays and every claim is stopped;
 * - adopted for a disabled app (an enable whose write never became durable): stopped (disable).
 */
export function recoverOrphans(context: OrphanRecoveryContext): void {
  const { apps, workDir, previous, contradicted, output, logger, now } = context;
  const taken = new Set<number>([daemonPid]);
  const takenUuids = new Set<string>();
  for (const app of apps.values()) {
    if (app.process === undefined) continue;
    taken.add(app.process.pid);
    takenUuids.add(app.process.processUuid);
  }
  const scan = scanClaimingProcesses({ skip: (pid) => taken.has(pid) });
  const byApp = new Map<string, Map<string, ClaimingProcess>>();
  for (const claim of scan.claims) {
    const fields = { app: claim.app, pid: claim.pid };
    if (!keyVerifies(claim.processUuid, claim.processKey, context.keyOf)) {
      logger.debug('process claims an app but its key does not verify: left alone', fields);
      continue;
    }
    if (takenUuids.has(claim.processUuid)) continue;
    if (contradicted.has(`${claim.pid}/${claim.processUuid}`)) {
      // The snapshot names this very process (pid and uuid) with another start time: the record
      // contradicts /proc, so the snapshot's rule stands (not adopted, left alone). Our own later
      // process that reused the pid has another uuid and is adopted.
      logger.info('process contradicts its snapshot entry (start time): left alone', fields);
      continue;
    }
    if (!apps.has(claim.app)) {
      if (existsSync(join(workDir, 'apps', `${claim.app}.yaml`)))
        logger.warn('process of an app whose definition did not load: left alone', fields);
      else stopStray(context, claim, 'stray', 'its app is not registered (no definition file)');
      continue;
    }
    const saved = previous?.apps[claim.app];
    const known = saved?.uuids?.indexOf(claim.processUuid) ?? -1;
    const out0 = saved?.outputs?.[0];
    if (known > 0 || (known === 0 && out0?.processUuid === claim.processUuid && out0.exited)) {
      logger.info('process of an exited generation of the app (detached descendant): left alone', fields);
      continue;
    }
    if (environHasUuid(claim.ppid, claim.processUuid)) {
      logger.info('process is a self-detached descendant of a process of the app: left alone', fields);
      continue;
    }
    let claims = byApp.get(claim.app);
    if (claims === undefined) byApp.set(claim.app, (claims = new Map<string, ClaimingProcess>()));
    const other = claims.get(claim.processUuid);
    // Same start tick (10 ms): the smaller pid is the older one, pid wrap-around aside.
    const older =
      other === undefined ||
      claim.startTicks < other.startTicks ||
      (claim.startTicks === other.startTicks && claim.pid < other.pid);
    if (older) claims.set(claim.processUuid, claim);
  }
  let recovered = 0;
  for (const [name, claims] of byApp) {
    const app = apps.get(name) as AppLifecycle;
    const ordered = [...claims.values()].sort((a, b) => b.startTicks - a.startTicks || b.pid - a.pid);
    const winner = app.process === undefined ? ordered.shift() : undefined;
    for (const loser of ordered) {
      stopStray(
        context,
        loser,
        'duplicate',
        winner === undefined ? 're-attached to its snapshot process' : `keeping ${winner.pid}`,
      );
    }
    if (winner === undefined || !isSameProcess(winner.pid, winner.startTicks)) continue;
    const saved = previous?.apps[name];
    const startRecorded = saved?.uuids?.[0] === winner.processUuid;
    output.restoreForOrphan(name, winner.processUuid, saved?.outputs);
    // Held by svc-spawner: its exit comes from there (real exit code), not from a poll.
    const held = context.runner.claim?.(winner.processUuid);
    app.adoptOrphan(
      {
        pid: winner.pid,
        processUuid: winner.processUuid,
        startedAt: winner.launchedAt ?? now(),
        startTicks: winner.startTicks,
        adopted: held === undefined,
      },
      startRecorded,
      held,
    );
    if (held === undefined) context.watchAdopted(app);
    recovered++;
    const targets = outputTargets(winner.pid);
    const file = output.path(name, 0);
    logger.info('re-attached to a process the snapshot did not list', {
      app: name,
      pid: winner.pid,
      processUuid: winner.processUuid,
      ...(targets.includes(file) ? {} : { stdout: targets[0], stderr: targets[1] }),
    });
    if (!app.def.enabled) {
      logger.warn('orphan of a disabled app stopped (deliberate stop)', { app: name, pid: winner.pid });
      void app.stop('disable');
    }
  }
  logger.info('orphan scan done', {
    ms: Math.round(scan.ms * 100) / 100,
    entries: scan.entries,
    leaders: scan.leaders,
    claims: scan.claims.length,
    recovered,
    ...(scan.truncated ? { truncated: true } : {}),
  });
}

export interface HeldRecoveryContext {
  apps: ReadonlyMap<string, AppLifecycle>;
  previous: SnapshotData | undefined;
  runner: ProcessRunner;
  output: OutputStore;
  now: () => number;
  logger: Logger;
}

/**
 * After the snapshot's re-attachments and the orphan scan: processes svc-spawner still holds that
 * neither found (the snapshot lost their start, and they exited while no daemon ran, or dropped
 * their environment). The spawner's tag names their app and process uuid, so they are recorded
 * like an orphan: an exit with its real exit code, or a running process adopted. Left to the
 * spawner's `settle` (acknowledged, forgotten): an app that is gone or runs another process, and an
 * older generation or an exit the snapshot already recorded.
 */
export function recoverHeld(context: HeldRecoveryContext): void {
  const { apps, previous, runner, output, now, logger } = context;
  for (const held of runner.held?.() ?? []) {
    const app = apps.get(held.app);
    if (app === undefined || app.process !== undefined) continue;
    const saved = previous?.apps[held.app];
    const known = saved?.uuids?.indexOf(held.processUuid) ?? -1;
    const out0 = saved?.outputs?.[0];
    if (known > 0 || (known === 0 && out0?.processUuid === held.processUuid && out0.exited)) continue;
    const spawned = runner.claim?.(held.processUuid);
    if (spawned === undefined) continue;
    output.restoreForOrphan(held.app, held.processUuid, saved?.outputs);
    app.adoptOrphan(
      {
        pid: held.pid,
        processUuid: held.processUuid,
        startedAt: known === 0 ? (saved?.lastStartAt ?? now()) : now(),
        startTicks: 0,
        adopted: false,
      },
      known === 0,
      spawned,
    );
    logger.info('re-attached to a process held by svc-spawner that the snapshot did not list', {
      app: held.app,
      pid: held.pid,
      processUuid: held.processUuid,
      exitCode: held.exitCode,
    });
    if (held.exitCode === undefined && !app.def.enabled) {
      logger.warn('held process of a disabled app stopped (deliberate stop)', {
        app: held.app,
        pid: held.pid,
      });
      void app.stop('disable');
    }
  }
}
