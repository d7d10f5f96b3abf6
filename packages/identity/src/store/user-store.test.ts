import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bootstrapCredentials, loadCredentials } from '../credentials/bootstrap.ts';
import { CredentialError } from '../credentials/errors.ts';
import { hashPassword } from '../credentials/password.ts';
import { UserStore, UserStoreError, parseUsersFile, usersFilePath } from './user-store.ts';

let home: string;
let work: string;
let hash: string;

beforeAll(async () => {
  hash = await hashPassword('user-password');
});
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'svc-user-store-'));
  work = join(home, 'work');
  await bootstrapCredentials(work, { mode: 'builtin' });
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

async function storeError(promise: Promise<unknown>, code: string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UserStoreError);
  expect((error as UserStoreError).code).toBe(code);
}

describe('UserStore', () => {
  it('lists the static identities from the credential files', async () => {
    const store = await UserStore.open(work);
    const credentials = await loadCredentials(work, { mode: 'builtin' });
    expect(store.list().map((u) => [u.user_id, u.username, u.email, u.static])).toEqual([
      ['admin', 'admin', 'admin@svc.local', true],
      ['guest', 'guest', 'guest@svc.local', true],
    ]);
    expect(store.findByLogin('admin')?.password_hash).toBe(credentials.admin.password_hash);
    expect(store.findByLogin('GUEST@svc.local')?.user_id).toBe('guest');
    expect(store.findById('admin')?.static).toBe(true);
  });

  it('round-trips created users through users.yaml (mode 0600)', async () => {
    const store = await UserStore.open(work);
    const alice = await store.create({ email: 'Alice@Example.org', passwordHash: hash });
    expect(alice).toMatchObject({ username: 'Alice@Example.org', email: 'Alice@Example.org', static: false });
    expect(alice.user_id).toMatch(/^[0-9a-f-]{36}$/);
    const bob = await store.create({ email: 'bob@example.org', passwordHash: hash });
    await store.setMfa(bob.user_id, true);
    const newHash = await hashPassword('changed');
    await store.setPasswordHash(alice.user_id, newHash);
    expect((await stat(usersFilePath(work))).mode & 0o777).toBe(0o600);

    const reopened = await UserStore.open(work);
    expect(reopened.list()).toEqual(store.list());
    expect(reopened.findByLogin('alice@example.org')?.password_hash).toBe(newHash);
    expect(reopened.findById(bob.user_id)?.mfa_enabled).toBe(true);

    expect(await reopened.delete('ALICE@example.org')).toMatchObject({ user_id: alice.user_id });
    expect(await reopened.delete('alice@example.org')).toBeUndefined();
    expect((await UserStore.open(work)).list().map((u) => u.email)).toEqual([
      'admin@svc.local',
      'guest@svc.local',
      'bob@example.org',
    ]);
  });

  it('refuses static identities, duplicates and invalid input', async () => {
    const store = await UserStore.open(work);
    await storeError(store.create({ email: 'admin@svc.local', passwordHash: hash }), 'static');
    await storeError(store.create({ email: 'Guest@SVC.local', passwordHash: hash }), 'static');
    await storeError(store.delete('admin@svc.local'), 'static');
    await storeError(store.setPasswordHash('admin', hash), 'static');
    await storeError(store.setMfa('guest', true), 'static');
    await store.create({ email: 'carol@example.org', passwordHash: hash });
    await storeError(store.create({ email: 'CAROL@example.org', passwordHash: hash }), 'exists');
    await storeError(store.create({ email: 'no-at-sign', passwordHash: hash }), 'invalid');
    await storeError(store.create({ email: 'a b@example.org', passwordHash: hash }), 'invalid');
    await storeError(store.create({ email: 'x@example.org\nusers: []', passwordHash: hash }), 'invalid');
    await storeError(
      store.create({ email: 'dave@example.org', passwordHash: '$2b$12$' + hash.slice(7) }),
      'invalid',
    );
    await storeError(store.setMfa('00000000-0000-0000-0000-000000000000', true), 'not-found');
    expect(store.list()).toHaveLength(3);
  });

  it('stores hostile but valid values verbatim (YAML syntax in an email)', async () => {
    const store = await UserStore.open(work);
    const emails = [
      "o'brien+x@example.org",
      '"quoted"@example.org',
      'a:#b&c*d@x.y',
      '!!js/function@evil',
      '-dash@x.y',
    ];
    for (const email of emails) await store.create({ email, passwordHash: hash });
    const reopened = await UserStore.open(work);
    expect(
      reopened
        .list()
        .slice(2)
        .map((u) => u.email),
    ).toEqual(emails);
  });

  it('serializes concurrent writes (none lost)', async () => {
    const store = await UserStore.open(work);
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.create({ email: `u${i}@example.org`, passwordHash: hash })),
    );
    expect((await UserStore.open(work)).list()).toHaveLength(22);
  });

  it('refuses a users.yaml that breaks a rule, naming the file, line and rule', async () => {
    const file = usersFilePath(work);
    const entry = (over: Record<string, string>): string =>
      [
        'users:',
        `  - user_id: ${over['user_id'] ?? '0b5f5f5e-1111-4222-8333-944444444444'}`,
        `    username: ${over['username'] ?? 'e@x.y'}`,
        `    email: ${over['email'] ?? 'e@x.y'}`,
        `    password_hash: "${over['password_hash'] ?? hash}"`,
        `    created_at: ${over['created_at'] ?? '2025-01-01T00:00:00.000Z'}`,
        '    mfa_enabled: false',
        '',
      ].join('\n');
    expect(parseUsersFile(entry({}), file)).toHaveLength(1);
    const cases: [string, number, RegExp][] = [
      [
        entry({ password_hash: '$2b$12$' + hash.slice(7) }),
        5,
        /users\[0\]\.password_hash must have bcrypt cost exactly 10/,
      ],
      [entry({ user_id: 'admin' }), 2, /users\[0\]\.user_id must be a lower-case UUID/],
      [entry({ email: 'admin@svc.local', username: 'admin@svc.local' }), 4, /already in use/],
      [entry({ username: 'other@x.y' }), 3, /username must equal the email/],
      [entry({ created_at: 'yesterday' }), 6, /created_at must be an ISO 8601 time/],
      [entry({}).replace('    mfa_enabled: false', '    role: svc-admin'), 7, /unknown field/],
      [entry({}) + entry({}).replace('users:\n', ''), 8, /user_id is already in use/],
      ['users: [\n', 2, /not valid YAML/],
      ['admins: []\n', 1, /unknown top-level key/],
      ['users: {}\n', 1, /users must be a list/],
    ];
    for (const [text, line, rule] of cases) {
      let error: unknown;
      try {
        parseUsersFile(text, file);
      } catch (e) {
        error = e;
      }
      expect(error, text).toBeInstanceOf(CredentialError);
      expect((error as CredentialError).line, text).toBe(line);
      expect((error as CredentialError).message, text).toMatch(rule);
      expect((error as CredentialError).message.startsWith(`${file}:${line}: `)).toBe(true);
    }
    await writeFile(file, cases[0]![0], { mode: 0o600 });
    await expect(UserStore.open(work)).rejects.toThrow(
      `${file}:5: users[0].password_hash must have bcrypt cost`,
    );
    expect(parseUsersFile('', file)).toEqual([]);
    expect(parseUsersFile('users:\n', file)).toEqual([]);
  });

  it('a failed write leaves memory and file unchanged', async () => {
    const store = await UserStore.open(work);
    await store.create({ email: 'keep@example.org', passwordHash: hash });
    const before = await readFile(usersFilePath(work), 'utf8');
    await rm(join(work, 'auth'), { recursive: true }); // the directory vanishes: the write fails
    await expect(store.create({ email: 'lost@example.org', passwordHash: hash })).rejects.toThrow(/ENOENT/);
    expect(store.list().map((u) => u.email)).toEqual([
      'admin@svc.local',
      'guest@svc.local',
      'keep@example.org',
    ]);
    expect(before).toContain('keep@example.org');
  });
});
