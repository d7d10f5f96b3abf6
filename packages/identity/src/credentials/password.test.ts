import bcrypt from 'bcryptjs';
import { describe, expect, it } from 'vitest';
import {
  generatePassword,
  hashPassword,
  hashProblem,
  isValidPasswordHash,
  passwordProblem,
  verifyPassword,
} from './password.ts';

describe('password rules', () => {
  it('hashes with cost 10 in the accepted form and verifies', async () => {
    const hash = await hashPassword('correct horse');
    expect(hash).toMatch(/^\$2b\$10\$[./A-Za-z0-9]{53}$/);
    expect(await verifyPassword('correct horse', hash)).toBe(true);
    expect(await verifyPassword('wrong horse', hash)).toBe(false);
  });

  it('accepts $2y$ and $2a$ hashes (verifying them too)', async () => {
    const hash = await hashPassword('pw-2y');
    for (const prefix of ['$2y$', '$2a$']) {
      const other = prefix + hash.slice(4);
      expect(hashProblem(other)).toBeUndefined();
      expect(await verifyPassword('pw-2y', other)).toBe(true);
    }
  });

  it('rejects a hash of cost 12, naming the cost', async () => {
    const hash = await bcrypt.hash('pw', 12);
    expect(isValidPasswordHash(hash)).toBe(false);
    expect(hashProblem(hash)).toBe('password_hash must have bcrypt cost exactly 10 (it has cost 12)');
    expect(await verifyPassword('pw', hash)).toBe(false);
  });

  it.each([
    '',
    'plain',
    '$2x$10$' + 'a'.repeat(53),
    '$2b$10$' + 'a'.repeat(52),
    '$2b$10$' + 'a'.repeat(52) + '!',
  ])('rejects the malformed hash %j', (hash) => {
    expect(hashProblem(hash)).toMatch(/^password_hash must be a bcrypt hash/);
  });

  it('allows 72 bytes and rejects 73 bytes (also multi-byte characters)', async () => {
    expect(passwordProblem('a'.repeat(72))).toBeUndefined();
    expect(passwordProblem('a'.repeat(73))).toBe('password must be at most 72 bytes (it has 73)');
    expect(passwordProblem('é'.repeat(37))).toBe('password must be at most 72 bytes (it has 74)');
    await expect(hashPassword('a'.repeat(73))).rejects.toThrow(/at most 72 bytes/);
    // bcrypt would accept the 73-byte password against the hash of its 72-byte prefix: we do not.
    const hash = await hashPassword('a'.repeat(72));
    expect(await bcrypt.compare('a'.repeat(73), hash)).toBe(true);
    expect(await verifyPassword('a'.repeat(73), hash)).toBe(false);
  });

  it('rejects empty and multi-line passwords', () => {
    expect(passwordProblem('')).toBe('password must not be empty');
    expect(passwordProblem('a\nb')).toBe('password must be one line without NUL characters');
  });

  it('generates 48 hex characters (24 random bytes)', () => {
    const a = generatePassword();
    expect(a).toMatch(/^[0-9a-f]{48}$/);
    expect(generatePassword()).not.toBe(a);
  });

  it('a leftover hash used as the password does not verify', async () => {
    const hash = await hashPassword('secret');
    expect(await verifyPassword(hash.slice(0, 72), hash)).toBe(false);
  });
});
