// Group commit of durable writes to one directory. Each write is `apply` (make the new state of
// one key visible: a temp file written with O_DSYNC and renamed over the target, or an unlink),
// then a `sync` that STARTED after that apply ended (the directory fsync that makes the rename or
// unlink durable). Concurrent writes share syncs: at most one sync runs and at most one more waits
// to start, so N writes that end their applies while a sync runs are made durable by the next
// single one. A lone write waits for nothing: its apply starts at once, its sync right after.
//
// Writes of one key are ordered: a write of a key whose previous write is still applying waits,
// and every value that arrives meanwhile replaces the waiting one (last wins); each caller is
// answered when a write of its value or of a later value of that key is durable. An error of an
// apply goes to the callers of that write alone; an error of a sync to every write it covered.
// Pure logic: the I/O is passed in (real files in util/dir-files.ts and util/journaled-dir.ts, fakes in the tests).

export interface GroupCommitIo<V> {
  /** Make `value` the visible state of `key` (not yet durable). Called at most once per key at a time. */
  apply(key: string, value: V): Promise<void>;
  /** Make every apply that ended before this call durable (one directory fsync). */
  sync(): Promise<void>;
}

interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

interface Pending<V> {
  value: V;
  waiters: Waiter[];
}

/** Per key: the write applying now (if any) and the one waiting for it. */
interface Slot<V> {
  applying: boolean;
  next: Pending<V> | undefined;
}

const ignore = (): void => undefined;

export class GroupCommitter<V> {
  readonly #io: GroupCommitIo<V>;
  readonly #slots = new Map<string, Slot<V>>();
  #syncing: Promise<void> | undefined;
  #queuedSync: Promise<void> | undefined;

  constructor(io: GroupCommitIo<V>) {
    this.#io = io;
  }

  /**
   * Durably write `value` as the state of `key`. The apply of a key with no write in progress is
   * issued synchronously, before this returns (so a caller can overlap other work with it).
   */
  commit(key: string, value: V): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject };
      const slot = this.#slots.get(key);
      if (slot === undefined) {
        const fresh: Slot<V> = { applying: false, next: undefined };
        this.#slots.set(key, fresh);
        this.#start(key, fresh, { value, waiters: [waiter] });
      } else if (slot.next === undefined) {
        slot.next = { value, waiters: [waiter] };
      } else {
        slot.next.value = value;
        slot.next.waiters.push(waiter);
      }
    });
  }

  #start(key: string, slot: Slot<V>, write: Pending<V>): void {
    slot.applying = true;
    let applied: Promise<void>;
    try {
      applied = this.#io.apply(key, write.value);
    } catch (error) {
      applied = Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    applied.then(
      () => {
        this.#applyEnded(key, slot);
        this.#requestSync().then(
          () => write.waiters.forEach((w) => w.resolve()),
          (error: unknown) => write.waiters.forEach((w) => w.reject(error)),
        );
      },
      (error: unknown) => {
        this.#applyEnded(key, slot);
        write.waiters.forEach((w) => w.reject(error));
      },
    );
  }

  /** The key's next write (if one waits) may apply now: renames of one key stay in order. */
  #applyEnded(key: string, slot: Slot<V>): void {
    slot.applying = false;
    const next = slot.next;
    slot.next = undefined;
    if (next !== undefined) this.#start(key, slot, next);
    else this.#slots.delete(key);
  }

  /** A sync that starts after this call: the running one started earlier, so a new one is needed. */
  #requestSync(): Promise<void> {
    if (this.#queuedSync !== undefined) return this.#queuedSync;
    if (this.#syncing === undefined) return this.#startSync();
    const queued = this.#syncing.then(ignore, ignore).then(() => {
      this.#queuedSync = undefined;
      return this.#startSync();
    });
    this.#queuedSync = queued;
    return queued;
  }

  #startSync(): Promise<void> {
    let running: Promise<void>;
    try {
      running = this.#io.sync();
    } catch (error) {
      running = Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    this.#syncing = running;
    const clear = (): void => {
      if (this.#syncing === running) this.#syncing = undefined;
    };
    running.then(clear, clear);
    return running;
  }
}
