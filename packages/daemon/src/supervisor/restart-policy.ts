// What to do when a process exits on its own, and how long to wait before starting it again.
// Pure functions: the runtime passes the clock in and owns the timers. A deliberate stop
// (disable, delete, replace, timeout, daily window end) never reaches this file.
import type { AppDefinition, ExitAction } from '../model/app-definition.ts';

/** The resolved action: `keepalive` and a failed `restart` both come out as `restart`. */
export type ResolvedExitAction = Exclude<ExitAction, 'keepalive'>;

/**
 * `behavior.exit_code_actions[<code>]` wins when present and means exactly its action (`restart` and
 * `keepalive` both start again, even for code 0). Otherwise `behavior.exit`:
 *   standby -> standby; restart -> restart unless the code is 0 (then standby);
 *   keepalive -> restart; remove -> remove.
 * A signal exit is negative (-9) and therefore a failure.
 * A system application (part of svc itself, e.g. svc-identity) always restarts, whatever its exit
 * code or behavior: nothing else would ever start it again.
 */
export function decideExitAction(
  def: Pick<AppDefinition, 'behavior'> & { system?: boolean },
  exitCode: number,
): ResolvedExitAction {
  if (def.system === true) return 'restart';
  const key = String(exitCode === 0 ? 0 : exitCode);
  const actions = def.behavior.exit_code_actions;
  const perCode = Object.hasOwn(actions, key) ? actions[key] : undefined;
  if (perCode !== undefined) return perCode === 'keepalive' ? 'restart' : perCode;
  switch (def.behavior.exit) {
    case 'standby':
      return 'standby';
    case 'restart':
      return exitCode === 0 ? 'standby' : 'restart';
    case 'keepalive':
      return 'restart';
    case 'remove':
      return 'remove';
  }
}

/** A run at least this long counts as healthy and resets the backoff. */
export const STABLE_RUN_MS = 60_000;
export const FIRST_BACKOFF_MS = 1_000;
export const MAX_BACKOFF_MS = 300_000;

export interface CrashState {
  /** Exits in a row whose run was shorter than STABLE_RUN_MS (the current one included). */
  readonly quickExits: number;
  /** When the last exit was recorded (epoch ms), undefined before the first. */
  readonly lastExitAt: number | undefined;
  /** Earliest time the next start may happen (epoch ms). */
  readonly restartAt: number | undefined;
}

export const INITIAL_CRASH_STATE: CrashState = { quickExits: 0, lastExitAt: undefined, restartAt: undefined };

/**
 * Record an exit that leads to an automatic restart and return the delay before that restart.
 * `ranMs` is how long the process ran. The first restart is immediate; each further exit in a
 * row that ran under 60 s doubles the delay from 1 s up to 300 s; a run of 60 s or more resets.
 * Sequence of quick exits: 0, 1 s, 2 s, 4 s, ... 256 s, 300 s, 300 s ...
 */
export function nextBackoff(
  state: CrashState,
  ranMs: number,
  now: number,
): { delayMs: number; state: CrashState } {
  const quickExits = ranMs >= STABLE_RUN_MS ? 1 : state.quickExits + 1;
  const delayMs =
    quickExits <= 1 ? 0 : Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** Math.min(quickExits - 2, 30));
  return { delayMs, state: { quickExits, lastExitAt: now, restartAt: now + delayMs } };
}
