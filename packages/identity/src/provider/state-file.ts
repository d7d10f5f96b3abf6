// svc-identity's state across restarts (CONTRACT §8, issue 12 item 12), under work/auth/identity/
// (0700), each file mode 0600, written atomically (temp file + rename) and encrypted whole with
// secret-master-key (`enc:v1:…`, AES-256-GCM):
//
//   keys.json    signing-key ring (private JWKs, creation/retirement times) + cookie signing keys;
//                written at once whenever the ring changes (start, rotation, retirement)
//   models.json  the provider's models: grants, refresh tokens, device codes, sessions, codes;
//                written at most once a second after a change, and on close
//
// Not kept: interactions (unfinished sign-ins, also the cheapest thing for an anonymous client to
// create) and the refresh reuse window. At most MAX_PERSISTED_MODELS entries are written (the
// newest); expired entries are neither written nor loaded. An unreadable file (another master key,
// damaged) is set aside as `<name>.unreadable` and the state starts empty: users sign in again.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '@svc/platform/atomic-file';
import type { SecretBox } from '../credentials/master-key.ts';
import { MemoryStore } from './adapter.ts';
import type { Entry } from './adapter.ts';
import type { KeyRingSnapshot } from './keys.ts';

export const MAX_PERSISTED_MODELS = 20_000;
/** Delay that coalesces model writes (a burst of token requests is one write). */
const WRITE_DELAY_MS = 1000;
const TRANSIENT_MODELS = ['Interaction:', 'PushedAuthorizationRequest:'];

export function identityStateDir(workDir: string): string {
  return join(workDir, 'auth', 'identity');
}

interface KeysFile {
  ring: KeyRingSnapshot;
  cookieKeys: string[];
}

export class IdentityState {
  readonly models: MemoryStore;
  readonly cookieKeys: string[];
  readonly keys: KeyRingSnapshot | undefined;
  readonly #dir: string;
  readonly #box: SecretBox;
  readonly #onError: (error: unknown) => void;
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> = Promise.resolve();
  #closed = false;

  private constructor(
    dir: string,
    box: SecretBox,
    models: MemoryStore,
    keys: KeysFile | undefined,
    onError: (error: unknown) => void,
  ) {
    this.#dir = dir;
    this.#box = box;
    this.#onError = onError;
    this.models = models;
    this.keys = keys?.ring;
    this.cookieKeys = keys?.cookieKeys.length ? keys.cookieKeys : [randomBytes(32).toString('base64url')];
    models.onChange = () => this.#schedule();
  }

  /** Reads the state of `workDir` (empty when there is none or it is unreadable). */
  static async open(
    workDir: string,
    box: SecretBox,
    options: { now?: (() => number) | undefined; onError?: ((error: unknown) => void) | undefined } = {},
  ): Promise<IdentityState> {
    const dir = identityStateDir(workDir);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const onError = options.onError ?? (() => undefined);
    const keys = await readEncrypted<KeysFile>(join(dir, 'keys.json'), box, onError);
    const models = new MemoryStore(options.now);
    const saved = await readEncrypted<[string, Entry][]>(join(dir, 'models.json'), box, onError);
    if (Array.isArray(saved)) models.load(saved.filter(isEntryPair));
    return new IdentityState(dir, box, models, keys, onError);
  }

  /** Writes the key ring now (called whenever it changes). */
  saveKeys(ring: KeyRingSnapshot): Promise<void> {
    const body: KeysFile = { ring, cookieKeys: this.cookieKeys };
    return this.#enqueue(() => this.#write('keys.json', body));
  }

  /** Writes pending model changes and stops further writes. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      await this.#enqueue(() => this.#writeModels());
    }
    await this.#writing;
  }

  /** Writes the models now (tests and close). */
  flush(): Promise<void> {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    return this.#enqueue(() => this.#writeModels());
  }

  #schedule(): void {
    if (this.#closed || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#enqueue(() => this.#writeModels());
    }, WRITE_DELAY_MS);
    this.#timer.unref();
  }

  #enqueue(write: () => Promise<void>): Promise<void> {
    this.#writing = this.#writing.then(write).catch((error: unknown) => this.#onError(error));
    return this.#writing;
  }

  #writeModels(): Promise<void> {
    const kept = this.models
      .snapshot()
      .filter(([key]) => !TRANSIENT_MODELS.some((prefix) => key.startsWith(prefix)))
      .slice(-MAX_PERSISTED_MODELS);
    return this.#write('models.json', kept);
  }

  async #write(name: string, body: unknown): Promise<void> {
    const token = this.#box.encrypt(JSON.stringify(body));
    await writeFileAtomic(join(this.#dir, name), token + '\n', { mode: 0o600, ownerFromDirectory: true });
  }
}

function isEntryPair(value: unknown): value is [string, Entry] {
  if (!Array.isArray(value) || value.length !== 2 || typeof value[0] !== 'string') return false;
  const entry = value[1] as Partial<Entry> | null;
  return (
    typeof entry === 'object' &&
    entry !== null &&
    typeof entry.payload === 'object' &&
    entry.payload !== null &&
    (entry.expiresAt === undefined || typeof entry.expiresAt === 'number')
  );
}

async function readEncrypted<T>(
  file: string,
  box: SecretBox,
  onError: (error: unknown) => void,
): Promise<T | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    return JSON.parse(box.decrypt(text.trim())) as T;
  } catch (error) {
    onError(new Error(`${file}: unreadable (${(error as Error).message}); set aside, starting empty`));
    await rename(file, `${file}.unreadable`).catch(() => undefined);
    return undefined;
  }
}
