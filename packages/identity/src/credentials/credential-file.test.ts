import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CredentialError } from './errors.ts';
import {
  formatCredentialFile,
  newCredential,
  parseCredentialFile,
  readCredentialFile,
  writeCredentialFile,
} from './credential-file.ts';
import { hashPassword } from './password.ts';

const FILE = '/w/auth/secrets/initial-admin-credentials';
let hash: string;
let good: string;

beforeAll(async () => {
  hash = await hashPassword('the-plaintext');
  good = formatCredentialFile(newCredential('admin', hash, 'the-plaintext'));
});

function parseError(text: string, identity: 'admin' | 'guest' = 'admin'): CredentialError {
  try {
    parseCredentialFile(text, FILE, identity);
  } catch (error) {
    expect(error).toBeInstanceOf(CredentialError);
    const e = error as CredentialError;
    expect(e.message.startsWith(FILE)).toBe(true);
    expect(e.message).not.toContain('the-plaintext');
    expect(e.message).not.toContain(hash.slice(7));
    return e;
  }
  throw new Error('expected a CredentialError');
}

function replaceLine(key: string, value: string | undefined): string {
  return good
    .split('\n')
    .flatMap((line) =>
      line.startsWith(`${key}=`) ? (value === undefined ? [] : [`${key}=${value}`]) : [line],
    )
    .join('\n');
}

describe('credential file format', () => {
  it('parses the spec lines and keeps the optional plaintext', () => {
    expect(good).toBe(
      `username=admin\nemail=admin@svc.local\nuser_id=admin\npassword_hash=${hash}\npassword=the-plaintext\n`,
    );
    const parsed = parseCredentialFile(good, FILE, 'admin');
    expect(parsed).toEqual({
      identity: 'admin',
      username: 'admin',
      email: 'admin@svc.local',
      user_id: 'admin',
      password_hash: hash,
      password: 'the-plaintext',
    });
    const forgotten = parseCredentialFile(replaceLine('password', undefined), FILE, 'admin');
    expect(forgotten.password).toBeUndefined();
    expect('password' in forgotten).toBe(false);
  });

  it('accepts a $2y$ hash and CRLF line ends', () => {
    const text = replaceLine('password_hash', '$2y$' + hash.slice(4)).replaceAll('\n', '\r\n');
    expect(parseCredentialFile(text, FILE, 'admin').password_hash.startsWith('$2y$10$')).toBe(true);
  });

  it('rejects a cost 12 hash with the line number', () => {
    const e = parseError(replaceLine('password_hash', '$2b$12$' + hash.slice(7)));
    expect(e.line).toBe(4);
    expect(e.message).toBe(`${FILE}:4: password_hash must have bcrypt cost exactly 10 (it has cost 12)`);
  });

  it('rejects a plaintext of 73 bytes (72 is fine)', () => {
    expect(parseCredentialFile(replaceLine('password', 'p'.repeat(72)), FILE, 'admin').password).toHaveLength(
      72,
    );
    const e = parseError(replaceLine('password', 'p'.repeat(73)));
    expect(e.message).toBe(`${FILE}:5: password must be at most 72 bytes (it has 73)`);
  });

  it.each([
    ['username', 'root', 1, 'username must be "admin" verbatim'],
    ['username', 'admin ', 1, 'username must be "admin" verbatim'],
    ['email', 'Admin@svc.local', 2, 'email must be "admin@svc.local" verbatim'],
    ['user_id', 'guest', 3, 'user_id must be "admin" verbatim'],
  ])('rejects %s=%j (line %i)', (key, value, line, rule) => {
    const e = parseError(replaceLine(key, value));
    expect(e.line).toBe(line);
    expect(e.rule).toContain(rule);
  });

  it('checks the identity of the file it reads (admin content in the viewer file)', () => {
    const e = parseError(good, 'guest');
    expect(e.message).toBe(`${FILE}:1: username must be "guest" verbatim (the packaged guest identity)`);
  });

  it.each(['username', 'email', 'user_id', 'password_hash'])('rejects a missing %s= line', (key) => {
    expect(parseError(replaceLine(key, undefined)).message).toBe(`${FILE}: missing ${key}= line`);
  });

  it('rejects garbage, unknown keys and duplicates with line numbers', () => {
    expect(parseError('this is not a credential file\n').message).toBe(
      `${FILE}:1: line must have the form key=value`,
    );
    expect(parseError(good + 'role=svc-admin\n').message).toMatch(new RegExp(`^${FILE}:6: unknown key`));
    expect(parseError(good + `password_hash=${hash}\n`).message).toBe(
      `${FILE}:6: duplicate password_hash= line (first on line 4)`,
    );
    expect(parseError('\u0000\u0001binary').line).toBe(1);
    expect(parseError('').message).toBe(`${FILE}: missing username= line`);
  });

  it('rejects an empty plaintext line', () => {
    expect(parseError(replaceLine('password', '')).rule).toBe('password must not be empty');
  });
});

describe('credential file on disk', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-cred-file-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes through a temp file + rename: mode 0600, new inode, no temp file left', async () => {
    const file = join(dir, 'initial-admin-credentials');
    expect(await writeCredentialFile(file, newCredential('admin', hash, 'the-plaintext'))).toBe(true);
    const before = await stat(file);
    expect(before.mode & 0o7777).toBe(0o600);
    expect(await readCredentialFile(file, 'admin')).toMatchObject({ password: 'the-plaintext' });
    expect(await writeCredentialFile(file, newCredential('admin', hash))).toBe(true);
    const after = await stat(file);
    expect(after.ino).not.toBe(before.ino); // replaced by rename, not rewritten in place
    expect(after.mode & 0o7777).toBe(0o600);
    expect(await readFile(file, 'utf8')).not.toContain('password=');
    expect((await readdir(dir)).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
  });

  it('exclusive write leaves an existing file alone', async () => {
    const file = join(dir, 'initial-viewer-credentials');
    await writeFile(file, 'keep\n', { mode: 0o600 });
    expect(await writeCredentialFile(file, newCredential('guest', hash), { exclusive: true })).toBe(false);
    expect(await readFile(file, 'utf8')).toBe('keep\n');
    expect((await readdir(dir)).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
  });

  it('refuses to write invalid content', async () => {
    const file = join(dir, 'bad');
    await expect(
      writeCredentialFile(file, { ...newCredential('admin', hash), email: 'x@y' }),
    ).rejects.toThrow(/email must be "admin@svc.local" verbatim/);
    await expect(stat(file)).rejects.toThrow(/ENOENT/);
  });

  it('reading checks the file rules first', async () => {
    const file = join(dir, 'initial-admin-credentials');
    await chmod(file, 0o644);
    await expect(readCredentialFile(file, 'admin')).rejects.toThrow(
      `${file}: secret file must have mode 600 (it has 644)`,
    );
    await chmod(file, 0o600);
  });
});
