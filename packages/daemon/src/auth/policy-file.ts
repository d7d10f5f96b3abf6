// The policy file on disk, `work/auth/policy.yaml`, as PolicyStore (policy-store.ts) sees it: what
// was last read or written there (its stamp and content), so that an edit by someone else (the
// operator helper's add-user/delete-user while svcd runs) is noticed and is the difference from it.
import { readFile, stat } from 'node:fs/promises';
import { SvcError } from '@svc/protocol';
import {
  PolicyFileError,
  emptyState,
  parsePolicy,
  serializePolicy,
  type PolicyState,
} from './policy-document.ts';

interface DiskStamp {
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
}

/** The file as edited by someone else since our last read or write. */
export interface PolicyFileEdits {
  readonly stamp: DiskStamp;
  /** What the file holds now. */
  readonly file: PolicyState;
  /** What it held at our last read or write. */
  readonly base: PolicyState;
}

async function stampOf(file: string): Promise<DiskStamp | undefined> {
  try {
    const s = await stat(file);
    return { ino: s.ino, size: s.size, mtimeMs: s.mtimeMs };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function sameStamp(a: DiskStamp | undefined, b: DiskStamp | undefined): boolean {
  return a?.ino === b?.ino && a?.size === b?.size && a?.mtimeMs === b?.mtimeMs;
}

async function readPolicy(file: string): Promise<{ state: PolicyState; text: string | undefined }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { state: emptyState(), text: undefined };
    throw new PolicyFileError(`${file}: cannot be read: ${(error as Error).message}`, { cause: error });
  }
  return { state: parsePolicy(text, file), text };
}

export class PolicyFile {
  readonly path: string;
  #stamp: DiskStamp | undefined;
  /** What the file held at `#stamp` (an edit of the file is its difference from this). */
  #base: PolicyState;
  readonly #writeFile: (path: string, data: string, mode: number) => Promise<void>;

  private constructor(
    path: string,
    stamp: DiskStamp | undefined,
    base: PolicyState,
    writeFile: (path: string, data: string, mode: number) => Promise<void>,
  ) {
    this.path = path;
    this.#stamp = stamp;
    this.#base = base;
    this.#writeFile = writeFile;
  }

  /**
   * Reads and validates the file (absent = empty policy, `text` undefined); throws PolicyFileError
   * naming the file, the path inside it and the problem.
   */
  static async read(
    path: string,
    writeFile: (path: string, data: string, mode: number) => Promise<void>,
  ): Promise<{ file: PolicyFile; state: PolicyState; text: string | undefined }> {
    const stamp = await stampOf(path);
    const { state, text } = await readPolicy(path);
    return { file: new PolicyFile(path, stamp, state, writeFile), state, text };
  }

  /** Whether someone else changed the file since our last read or write. */
  async changed(): Promise<boolean> {
    return !sameStamp(await stampOf(this.path), this.#stamp);
  }

  /** The file as edited by someone else since our last read or write, or undefined. */
  async edits(): Promise<PolicyFileEdits | undefined> {
    const stamp = await stampOf(this.path);
    if (stamp === undefined || sameStamp(stamp, this.#stamp)) return undefined;
    return { stamp, file: await this.#readEdited(), base: this.#base };
  }

  /** `edits` are taken into account: the next edit is the difference from them. */
  accept(edits: PolicyFileEdits): void {
    this.#stamp = edits.stamp;
    this.#base = edits.file;
  }

  /** Replaces the file atomically (mode 0600) with `state`. */
  async write(state: PolicyState): Promise<void> {
    await this.#writeFile(this.path, serializePolicy(state), 0o600);
    this.#stamp = await stampOf(this.path);
    this.#base = state;
  }

  async #readEdited(): Promise<PolicyState> {
    try {
      return (await readPolicy(this.path)).state;
    } catch (error) {
      // Refuse to overwrite an operator's (broken) edit; known principals keep working meanwhile.
      throw new SvcError(
        'internal',
        'the policy file was edited and is now invalid; fix it to allow changes',
        {
          cause: error,
        },
      );
    }
  }
}
