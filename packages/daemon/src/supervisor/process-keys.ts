// Process keys: SVC_PROCESS_KEY = HMAC-SHA256(processKeySecret, process uuid), hex. With the uuid
// it proves that this installation started the process (README "Contract: the environment of a
// managed process"); never stored.
import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';

/** Key bytes kept for recent uuids; a dropped entry is recomputed. */
const KEPT_KEYS = 1024;

export class ProcessKeys {
  readonly #secret: KeyObject;
  /**
   * The keys of recent process uuids as bytes: a worker's every task request checks its key, and
   * the HMAC per check was most of that check's cost. Bounded.
   */
  readonly #bytes = new Map<string, Buffer>();

  constructor(secret: Buffer) {
    // One KeyObject for every HMAC: createHmac with a raw Buffer re-validates and copies the key
    // each call (~0.1 ms on the start path and on every worker request's key check).
    this.#secret = createSecretKey(secret);
  }

  /** The process key of `uuid`, hex. */
  keyOf(uuid: string): string {
    return createHmac('sha256', this.#secret).update(uuid).digest('hex');
  }

  #bytesOf(uuid: string): Buffer {
    let bytes = this.#bytes.get(uuid);
    if (bytes === undefined) {
      if (this.#bytes.size >= KEPT_KEYS) this.#bytes.clear();
      bytes = createHmac('sha256', this.#secret).update(uuid).digest();
      this.#bytes.set(uuid, bytes);
    }
    return bytes;
  }

  /** `key` against an app's recent uuids (newest first): `ok` for the current one, `superseded` for an older one. */
  verify(uuids: readonly string[], key: string): 'ok' | 'superseded' | 'unknown' {
    if (!/^[0-9a-f]{64}$/.test(key)) return 'unknown';
    const given = Buffer.from(key, 'hex');
    for (const [i, uuid] of uuids.entries()) {
      if (timingSafeEqual(given, this.#bytesOf(uuid))) return i === 0 ? 'ok' : 'superseded';
    }
    return 'unknown';
  }
}
