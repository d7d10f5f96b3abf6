// The issuer relay key (issue 25 M4): how svc-agent proves to svc-identity that a request it relays
// to /auth carries a client address it vouches for, as its process key does toward svcd
// (X-Svc-Agent-Key, packages/daemon/src/transports/agent-relay.ts). svc-identity writes a new random
// key to work/auth/secrets/issuer-relay-key (mode 0600, the secret-file rules) at each start; the
// agent, run by svcd as the same OS user, reads it for each request it relays to /auth, so a
// restart of either side needs nothing else. Other local users cannot read the file (work/ is
// 0700), and a local process that can is svc's user, which already holds every other secret.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { join } from 'node:path';
import { writeFileAtomic } from '@svc/platform/atomic-file';
import { secretsDir } from './credential-file.ts';
import { readSecretFile, secretFileExists } from './secret-files.ts';

const RELAY_KEY_BYTES = 32;
const RELAY_KEY_PATTERN = /^[0-9a-f]{64}$/;

export function relayKeyPath(workDir: string): string {
  return join(secretsDir(workDir), 'issuer-relay-key');
}

/** Writes a new relay key (replacing the previous one) and returns it. */
export async function writeRelayKey(workDir: string): Promise<string> {
  const key = randomBytes(RELAY_KEY_BYTES).toString('hex');
  await writeFileAtomic(relayKeyPath(workDir), `${key}\n`, { mode: 0o600, ownerFromDirectory: true });
  return key;
}

/**
 * The current relay key, or undefined when there is none (external mode, svc-identity not started
 * yet). A file that breaks the secret-file rules or holds anything but a key is an error.
 */
export async function readRelayKey(workDir: string): Promise<string | undefined> {
  const file = relayKeyPath(workDir);
  if (!(await secretFileExists(file))) return undefined;
  const key = (await readSecretFile(file)).trim();
  if (!RELAY_KEY_PATTERN.test(key)) throw new Error(`${file}: not a relay key`);
  return key;
}

/** Whether `presented` is `key`, in time independent of where they differ. */
export function relayKeyMatches(presented: string | string[] | undefined, key: string | undefined): boolean {
  if (key === undefined || typeof presented !== 'string' || presented.length !== key.length) return false;
  return timingSafeEqual(Buffer.from(presented), Buffer.from(key));
}
