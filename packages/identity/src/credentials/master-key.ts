// svc-identity's use of `work/auth/secrets/secret-master-key` (CONTRACT §2, §8): the daemon creates
// the key (64 hex characters); svc-identity encrypts with it what it keeps at rest — its signing
// keys (work/auth/identity/keys.json) and users' TOTP secrets (users.yaml `mfa_secret`). Same
// token format as the daemon's protected values: `enc:v1:<base64(iv[12] | tag[16] | ciphertext)>`,
// AES-256-GCM, a fresh IV per value. Started without a daemon (tests), it creates the key the same
// way the daemon would (exclusive create, 0600).
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

const PREFIX = 'enc:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export function createSecretBox(key: Uint8Array): SecretBox {
  if (key.length !== 32) throw new Error('the master key must be 32 bytes');
  const secret = Buffer.from(key);
  return {
    encrypt(plain) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', secret, iv);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
    },
    decrypt(token) {
      if (!token.startsWith(PREFIX)) throw new Error(`an encrypted value must start with ${PREFIX}`);
      const raw = Buffer.from(token.slice(PREFIX.length), 'base64');
      if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('the encrypted value is too short');
      const decipher = createDecipheriv('aes-256-gcm', secret, raw.subarray(0, IV_BYTES));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      try {
        return Buffer.concat([
          decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)),
          decipher.final(),
        ]).toString('utf8');
      } catch {
        throw new Error('the encrypted value does not decrypt with this secret-master-key');
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
