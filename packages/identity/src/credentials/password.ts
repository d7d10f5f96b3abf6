// Password rules (spec "Password rules", "Limits"): plaintext at most 72 bytes (bcrypt silently
// ignores the rest, so the length is checked here), hashes are bcrypt of cost exactly 10 in the
// form `$2[aby]$10$` + 53 characters of `./A-Za-z0-9`. bcryptjs verifies $2a$, $2b$ and $2y$.
import { randomBytes } from 'node:crypto';
import bcrypt from 'bcryptjs';

export const MAX_PASSWORD_BYTES = 72;
export const BCRYPT_COST = 10;
export const BCRYPT_HASH_PATTERN = /^\$2[aby]\$10\$[./A-Za-z0-9]{53}$/;
/** Bytes of a generated password; hex-encoded it is 48 characters. */
export const GENERATED_PASSWORD_BYTES = 24;

/** Why `password` breaks a rule, or undefined when it is acceptable. Never includes the password. */
export function passwordProblem(password: string): string | undefined {
  if (password.length === 0) return 'password must not be empty';
  const bytes = Buffer.byteLength(password, 'utf8');
  if (bytes > MAX_PASSWORD_BYTES)
    return `password must be at most ${MAX_PASSWORD_BYTES} bytes (it has ${bytes})`;
  if (/[\r\n\0]/.test(password)) return 'password must be one line without NUL characters';
  return undefined;
}

/** Shortest password accepted for a new or changed user password (add-user, admin UI). */
export const MIN_NEW_PASSWORD_LENGTH = 12;

/**
 * Why `password` may not become a user's password: the rules above plus a minimum length (a
 * password already stored still signs in; only new ones are checked). Never includes the password.
 */
export function newPasswordProblem(password: string): string | undefined {
  const problem = passwordProblem(password);
  if (problem !== undefined) return problem;
  if ([...password].length < MIN_NEW_PASSWORD_LENGTH)
    return `password must be at least ${MIN_NEW_PASSWORD_LENGTH} characters`;
  return undefined;
}

/** Why `hash` is not an acceptable stored hash, or undefined. Never includes the hash. */
export function hashProblem(hash: string): string | undefined {
  if (BCRYPT_HASH_PATTERN.test(hash)) return undefined;
  const cost = /^\$2[aby]\$(\d\d)\$/.exec(hash);
  if (cost !== null && cost[1] !== '10')
    return `password_hash must have bcrypt cost exactly 10 (it has cost ${Number(cost[1])})`;
  return 'password_hash must be a bcrypt hash: $2a$, $2b$ or $2y$, cost 10, then 53 characters of ./A-Za-z0-9';
}

export function isValidPasswordHash(hash: string): boolean {
  return BCRYPT_HASH_PATTERN.test(hash);
}

/** A new random password: 24 random bytes, hex-encoded (48 characters). */
export function generatePassword(): string {
  return randomBytes(GENERATED_PASSWORD_BYTES).toString('hex');
}

/** Hash with bcrypt cost 10 ($2b$). Throws when the password breaks a rule. */
export async function hashPassword(password: string): Promise<string> {
  const problem = passwordProblem(password);
  if (problem !== undefined) throw new RangeError(problem);
  return bcrypt.hash(password, BCRYPT_COST);
}

/**
 * Whether `password` matches `hash`. False for a password above 72 bytes (bcrypt would compare only
 * a prefix) and for a hash that is not of the accepted form.
 */
export async function verifyPassword(password: string, hash: string): Promise<boolean> {
  if (passwordProblem(password) !== undefined || !isValidPasswordHash(hash)) return false;
  return bcrypt.compare(password, hash);
}
