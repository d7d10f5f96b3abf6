// The live application list as pure state: a snapshot (GET /svc/applications) overlaid by events
// (START, EXIT, HEALTH, STATUS, REMOVED). Events are queued and applied in one batch per animation
// frame (`flush`, driven by the caller's scheduler), so 100 events/s cost at most one render per
// frame; a row object changes identity only when that row changed, so keyed rows can skip the rest.
import type { AppInfo, SubscriptionEvent } from '@svc/client/browser';

export type AppState = 'running' | 'stopped' | 'failed' | 'disabled';

export interface AppRow {
  readonly name: string;
  readonly state: AppState;
  readonly enabled: boolean;
  readonly health: 0 | 1 | undefined;
  readonly pid: number | undefined;
  readonly cpu: number | undefined;
  readonly memory: number | undefined;
  readonly restarts: number;
  readonly owner: string;
  readonly returnCode: number | null | undefined;
  readonly lastError: string | undefined;
  /** The whole record as last read or updated (detail view). */
  readonly info: AppInfo;
}

export type SortKey = 'name' | 'state' | 'health' | 'pid' | 'cpu' | 'memory' | 'restarts' | 'owner';

export interface ListQuery {
  /** Case-insensitive substring of name or owner; `state:running` style terms filter by state. */
  filter: string;
  sort: SortKey;
  descending: boolean;
}

function stateOf(info: AppInfo): AppState {
  if (info.enabled === false) return 'disabled';
  if (typeof info.pid === 'number' && info.pid > 0) return 'running';
  if (typeof info.return_code === 'number' && info.return_code !== 0) return 'failed';
  return 'stopped';
}

export function rowOf(info: AppInfo): AppRow {
  return {
    name: info.name,
    state: stateOf(info),
    enabled: info.enabled !== false,
    health: info.health,
    pid: typeof info.pid === 'number' && info.pid > 0 ? info.pid : undefined,
    cpu: typeof info.cpu === 'number' ? info.cpu : undefined,
    memory: typeof info.memory === 'number' ? info.memory : undefined,
    restarts: Math.max(0, (info.starts ?? 0) - 1),
    owner: info.owner_display_name ?? info.owner_principal_id ?? '',
    returnCode: info.return_code,
    lastError: typeof info.last_error === 'string' && info.last_error !== '' ? info.last_error : undefined,
    info,
  };
}

/** The record after `event` (pure); undefined when the app is gone. */
export function applyEvent(info: AppInfo, event: SubscriptionEvent): AppInfo | undefined {
  const data = event.data as Record<string, unknown>;
  switch (event.event_type) {
    case 'START': {
      const next: AppInfo = {
        ...info,
        starts: (info.starts ?? 0) + 1,
        last_start_time: Math.floor(event.timestamp / 1000),
        state: 'running',
      };
      if (typeof data['pid'] === 'number') next.pid = data['pid'];
      if (typeof data['process_uuid'] === 'string') next.process_uuid = data['process_uuid'];
      delete next.return_code;
      return next;
    }
    case 'EXIT': {
      const next: AppInfo = {
        ...info,
        return_code: typeof data['exit_code'] === 'number' ? data['exit_code'] : null,
        last_exit_time: Math.floor(event.timestamp / 1000),
        cpu: 0,
        memory: 0,
      };
      delete next.pid;
      // The daemon's lifecycle state after an exit (stopped, backoff, scheduled…) comes with the next read.
      delete next['state'];
      if (typeof data['last_error'] === 'string') next.last_error = data['last_error'];
      return next;
    }
    case 'HEALTH':
      return data['health'] === 0 || data['health'] === 1 ? { ...info, health: data['health'] } : info;
    case 'STATUS': {
      if (typeof data['enabled'] !== 'boolean') return info;
      const next: AppInfo = { ...info, enabled: data['enabled'] };
      if (data['enabled']) delete next['state'];
      else next['state'] = 'disabled';
      return next;
    }
    case 'REMOVED':
      return undefined;
    default:
      return info;
  }
}

export class AppListStore {
  readonly #rows = new Map<string, AppRow>();
  #queue: SubscriptionEvent[] = [];
  /** Bumped by each change that may alter what is shown. */
  version = 0;
  /** Names seen in events but not in the list (registered after the snapshot): fetch and `upsert`. */
  readonly unknown = new Set<string>();

  get size(): number {
    return this.#rows.size;
  }

  get(name: string): AppRow | undefined {
    return this.#rows.get(name);
  }

  /** Replaces the whole list; rows whose record did not change keep their identity. */
  replaceAll(apps: readonly AppInfo[]): void {
    const seen = new Set<string>();
    for (const info of apps) {
      seen.add(info.name);
      const old = this.#rows.get(info.name);
      if (old === undefined || !sameRecord(old.info, info)) this.#rows.set(info.name, rowOf(info));
    }
    for (const name of [...this.#rows.keys()]) if (!seen.has(name)) this.#rows.delete(name);
    this.version++;
  }

  upsert(info: AppInfo): void {
    this.#rows.set(info.name, rowOf(info));
    this.unknown.delete(info.name);
    this.version++;
  }

  /** Queues an event for the next `flush`. */
  push(event: SubscriptionEvent): void {
    this.#queue.push(event);
  }

  get pending(): number {
    return this.#queue.length;
  }

  /** Applies the queued events in order; returns whether anything changed. */
  flush(): boolean {
    if (this.#queue.length === 0) return false;
    const queue = this.#queue;
    this.#queue = [];
    const touched = new Map<string, AppInfo | undefined>();
    for (const event of queue) {
      if (event.event_type === '__disconnected__') continue;
      const name = event.app_name;
      const current = touched.has(name) ? touched.get(name) : this.#rows.get(name)?.info;
      if (current === undefined) {
        if (event.event_type !== 'REMOVED') this.unknown.add(name);
        continue;
      }
      touched.set(name, applyEvent(current, event));
    }
    for (const [name, info] of touched) {
      if (info === undefined) this.#rows.delete(name);
      else this.#rows.set(name, rowOf(info));
    }
    if (touched.size > 0) this.version++;
    return touched.size > 0;
  }

  /** The rows matching `query`, sorted. */
  view(query: ListQuery): AppRow[] {
    const { match, state } = parseFilter(query.filter);
    const rows: AppRow[] = [];
    for (const row of this.#rows.values()) {
      if (state !== undefined && row.state !== state) continue;
      if (match !== '' && !row.name.toLowerCase().includes(match) && !row.owner.toLowerCase().includes(match))
        continue;
      rows.push(row);
    }
    const direction = query.descending ? -1 : 1;
    const key = query.sort;
    // Missing values (no pid, no CPU reading) sort last in either direction.
    rows.sort((a, b) => {
      const [x, y] = [a[key], b[key]];
      if (x === undefined || y === undefined)
        return x === y ? a.name.localeCompare(b.name) : x === undefined ? 1 : -1;
      return direction * compare(x, y) || a.name.localeCompare(b.name);
    });
    return rows;
  }
}

function sameRecord(a: AppInfo, b: AppInfo): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => a[k] === b[k] || (typeof a[k] === 'object' && JSON.stringify(a[k]) === JSON.stringify(b[k])));
}

function compare(a: string | number, b: string | number): number {
  if (a === b) return 0;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b));
}

export function parseFilter(filter: string): { match: string; state: AppState | undefined } {
  let state: AppState | undefined;
  const words: string[] = [];
  for (const word of filter.trim().toLowerCase().split(/\s+/)) {
    const m = /^state:(running|stopped|failed|disabled)$/.exec(word);
    if (m !== null) state = m[1] as AppState;
    else if (word !== '') words.push(word);
  }
  return { match: words.join(' '), state };
}
