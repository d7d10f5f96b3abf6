// Encryption of protected environment values (secret_env) at rest, with the host's master key
// `work/auth/secrets/secret-master-key` (CONTRACT §2, spec "Bootstrap secret files").
//
// Token format: `enc:v1:<base64(iv[12] | tag[16] | ciphertext)>`, AES-256-GCM with a fresh random
// IV per value. The key file holds 64 hex characters (32 bytes) and a newline.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';

export interface SecretCrypter {
  encrypt(plain: string): string;
  /** Throws when the token is malformed or was not produced with this key. */
  decrypt(token: string): string;
}

export const TOKEN_PREFIX = 'enc:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

export function isEncryptedToken(value: string): boolean {
  return value.startsWith(TOKEN_PREFIX);
}

/** A crypter over a raw 32-byte key (tests and the loader use it). */
export function createSecretCrypter(key: Uint8Array): SecretCrypter {
  if (key.length !== KEY_BYTES) throw new Error(`secret master key must be ${KEY_BYTES} bytes`);
  const keyCopy = Buffer.from(key);
  return {
    encrypt(plain: string): string {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', keyCopy, iv);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return TOKEN_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
    },
    decrypt(token: string): string {
      if (!isEncryptedToken(token)) throw new Error(`encrypted value must start with "${TOKEN_PREFIX}"`);
      const b64 = token.slice(TOKEN_PREFIX.length);
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64)) throw new Error('encrypted value is not valid base64');
      const raw = Buffer.from(b64, 'base64');
      if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('encrypted value is too short');
      const decipher = createDecipheriv('aes-256-gcm', keyCopy, raw.subarray(0, IV_BYTES));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      try {
        return Buffer.concat([
          decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)),
          decipher.final(),
        ]).toString('utf8');
      } catch (error) {
        throw new Error(
          'encrypted value does not decrypt with this secret-master-key (wrong key or corrupted)',
          {
            cause: error,
          },
        );
      }
    },
  };
}

/**
 * Load the master key from `file`, creating it (0600, in a 0700 directory) when it does not exist.
 * Refuses a file that is not a regular file, not owned by this uid, readable or writable by group
 * or others, or hard-linked elsewhere. Error messages name the file, never its content.
 */
export async function loadOrCreateMasterKey(file: string): Promise<SecretCrypter> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  try {
    const handle = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    try {
      await handle.writeFile(randomBytes(KEY_BYTES).toString('hex') + '\n');
      await handle.chmod(0o600);
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return createSecretCrypter(await readMasterKey(file));
}

async function readMasterKey(file: string): Promise<Buffer> {
  const info = await lstat(file);
  if (!info.isFile())
    throw new Error(`${file}: secret-master-key must be a regular file (not a link or directory)`);
  const uid = process.getuid?.();
  if (uid !== undefined && info.uid !== uid) {
    throw new Error(`${file}: secret-master-key must be owned by uid ${uid} (owner is ${info.uid})`);
  }
  if ((info.mode & 0o077) !== 0) {
    throw new Error(
      `${file}: secret-master-key must not be accessible by group or others (mode ${(info.mode & 0o777).toString(8)}, expected 600)`,
    );
  }
  if (info.nlink !== 1)
    throw new Error(`${file}: secret-master-key must have exactly one hard link (has ${info.nlink})`);
  const text = (await readFile(file, 'utf8')).trim();
  if (!/^[0-9a-fA-F]{64}$/.test(text)) {
    throw new Error(`${file}: secret-master-key must contain ${KEY_BYTES * 2} hex characters`);
  }
  return Buffer.from(text, 'hex');
}
