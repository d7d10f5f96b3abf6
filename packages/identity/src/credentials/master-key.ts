// svc-identity's use of `work/auth/secrets/secret-master-key` (CONTRACT §2, §8): the daemon creates
// the key (64 hex characters); svc-identity encrypts with it what it keeps at rest — its signing
// keys (work/auth/identity/keys.json) and users' TOTP secrets (users.yaml `mfa_secret`).
// createSecretBox is the one cipher over that key: svcd's secret_env (model/secret-crypter.ts)
// uses it too. Started without a daemon (tests), svc-identity creates the key the same way the
// daemon would (exclusive create, 0600).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import { SECRET_FILE_NAMES, secretsDir } from './credential-file.ts';
import { readSecretFile } from './secret-files.ts';

export interface SecretBox {
  encrypt(plain: string): string;
  /** Throws when the token is malformed or was not made with this key. */
  decrypt(token: string): string;
}

/** Prefix of every value encrypted with the master key (svcd's secret_env and svc-identity's state). */
export const TOKEN_PREFIX = 'enc:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

export function isEncryptedToken(value: string): boolean {
  return value.startsWith(TOKEN_PREFIX);
}

/**
 * The one AES-256-GCM box over the master key, used by svcd (model/secret-crypter.ts) and by
 * svc-identity: `enc:v1:<base64(iv[12] | tag[16] | ciphertext)>`, a fresh random IV per value.
 */
export function createSecretBox(key: Uint8Array): SecretBox {
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
          { cause: error },
        );
      }
    },
  };
}

export function masterKeyPath(workDir: string): string {
  return join(secretsDir(workDir), SECRET_FILE_NAMES.masterKey);
}

/** The master key of `workDir` (created when missing), checked by the secret-file rules. */
export async function loadMasterKey(workDir: string): Promise<SecretBox> {
  const file = masterKeyPath(workDir);
  await mkdir(secretsDir(workDir), { recursive: true, mode: 0o700 });
  try {
    const handle = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    try {
      await handle.writeFile(randomBytes(32).toString('hex') + '\n');
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const text = (await readSecretFile(file)).trim();
  if (!/^[0-9a-fA-F]{64}$/.test(text))
    throw new Error(`${file}: secret-master-key must hold 64 hex characters`);
  return createSecretBox(Buffer.from(text, 'hex'));
}
