// Encryption of protected environment values (secret_env) at rest, with the host's master key
// `work/auth/secrets/secret-master-key` (CONTRACT §2, spec "Bootstrap secret files").
//
// Token format: `enc:v1:<base64(iv[12] | tag[16] | ciphertext)>`, AES-256-GCM with a fresh random
// IV per value. The key file holds 64 hex characters (32 bytes) and a newline.
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createSecretBox, isEncryptedToken, TOKEN_PREFIX, type SecretBox } from '@svc/identity';

/** The cipher is svc-identity's (the owner of work/auth/secrets/): one implementation for both. */
export type SecretCrypter = SecretBox;
export { isEncryptedToken, TOKEN_PREFIX };

/** A crypter over a raw 32-byte key (tests and the loader use it). */
export const createSecretCrypter: (key: Uint8Array) => SecretCrypter = createSecretBox;

const KEY_BYTES = 32;

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
