// The administrative gRPC API over real mutual TLS: refused without a client certificate or with
// one from another CA (code 14 UNAVAILABLE), and every RPC with the right one, including the
// refusals for the static identities.
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminClient, type AdminClient } from '../../src/admin/grpc-client.ts';
import { startAdminGrpcServer } from '../../src/admin/grpc-server.ts';
import { AdminService } from '../../src/admin/service.ts';
import { InMemorySessionRegistry } from '../../src/admin/sessions.ts';
import { ADMIN_TLS_FILES, adminTlsDir, generateAdminTls, loadOrCreateAdminTls } from '../../src/admin/tls.ts';
import { startAdminFixture, type AdminFixture } from './fixture.ts';
import { MemoryIdentityStore } from './memory-store.ts';

let fixture: AdminFixture;
let client: AdminClient;
beforeAll(async () => {
  fixture = await startAdminFixture();
  client = fixture.client();
});
afterAll(async () => {
  await fixture?.close();
});

const rejection = (code: grpc.status): unknown => expect.objectContaining({ code }) as unknown;

describe('mutual TLS', () => {
  it('refuses a client without a certificate (14 UNAVAILABLE)', async () => {
    const anonymous = createAdminClient(
      fixture.server.target,
      { caCert: fixture.tls.caCert },
      { deadlineMs: 5000 },
    );
    try {
      await expect(anonymous.Passwords.ListUsers({})).rejects.toEqual(rejection(grpc.status.UNAVAILABLE));
    } finally {
      anonymous.close();
    }
  });

  it('refuses a client certificate from another CA (14 UNAVAILABLE)', async () => {
    const foreign = await generateAdminTls('some other CA');
    const intruder = createAdminClient(
      fixture.server.target,
      { caCert: fixture.tls.caCert, clientCert: foreign.clientCert, clientKey: foreign.clientKey },
      { deadlineMs: 5000 },
    );
    try {
      await expect(intruder.Passwords.ListUsers({})).rejects.toEqual(rejection(grpc.status.UNAVAILABLE));
    } finally {
      intruder.close();
    }
  });

  it('serves a client with the admin client certificate', async () => {
    const { users } = await client.Passwords.ListUsers({});
    expect(users.map((user) => user.email)).toEqual(['admin@svc.local', 'guest@svc.local']);
    expect(users[0]).toEqual({
      user_id: 'admin',
      username: 'admin',
      email: 'admin@svc.local',
      static: true,
      created_at: '2024-01-01T00:00:00.000Z',
      mfa_enabled: false,
    });
    expect(JSON.stringify(users)).not.toContain('$2');
  });

  it('stores the material under work/auth/admin-tls with owner-only keys, once', async () => {
    const dir = adminTlsDir(fixture.workDir);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect((await readdir(dir)).sort()).toEqual(Object.values(ADMIN_TLS_FILES).sort());
    for (const name of [ADMIN_TLS_FILES.serverKey, ADMIN_TLS_FILES.clientKey])
      expect((await stat(join(dir, name))).mode & 0o777).toBe(0o600);
    expect(await loadOrCreateAdminTls(fixture.workDir)).toEqual(fixture.tls);
    // No CA private key is kept: nobody can mint another client certificate.
    for (const name of await readdir(dir))
      expect(await readFile(join(dir, name), 'utf8')).not.toContain('CA PRIVATE');
  });

  it('generates one set of material when two processes start at once', async () => {
    const workDir = await mkdtemp(join(tmpdir(), 'svc-admin-tls-'));
    try {
      const [a, b] = await Promise.all([loadOrCreateAdminTls(workDir), loadOrCreateAdminTls(workDir)]);
      expect(a).toEqual(b);
      expect((await readdir(join(workDir, 'auth'))).filter((name) => name.startsWith('.tmp'))).toEqual([]);
    } finally {
      await rm(workDir, { recursive: true, force: true });
    }
  });

  it('refuses a non-loopback listener', async () => {
    const service = new AdminService({
      store: new MemoryIdentityStore('x'),
      sessions: new InMemorySessionRegistry(),
      workDir: fixture.workDir,
    });
    for (const listen of ['0.0.0.0:0', '192.0.2.1:5557', 'example.com:5557', '[::]:0'])
      await expect(startAdminGrpcServer({ service, tls: fixture.tls, listen })).rejects.toThrow(/loopback/);
  });
});

describe('Passwords', () => {
  it('creates a user with a bcrypt cost-10 hash, who has no role and can sign in at once', async () => {
    const user = await client.Passwords.CreateUser({
      email: 'alice@example.com',
      password: 'correct horse staple',
    });
    expect(user).toMatchObject({ email: 'alice@example.com', static: false, mfa_enabled: false });
    expect(user.user_id).toMatch(/^[0-9a-f-]{36}$/);
    const stored = fixture.store.findByLogin('alice@example.com')!;
    expect(stored.password_hash).toMatch(/^\$2[aby]\$10\$[./A-Za-z0-9]{53}$/);
    expect(await bcrypt.compare('correct horse staple', stored.password_hash)).toBe(true);
    expect((await client.Passwords.ListUsers({})).users.map((u) => u.email)).toContain('alice@example.com');
    expect(JSON.stringify(fixture.audit)).not.toContain('correct horse staple');
  });

  it('refuses a taken email, a bad email, a bad password and the static identities', async () => {
    await expect(
      client.Passwords.CreateUser({ email: 'ALICE@example.com', password: 'x'.repeat(12) }),
    ).rejects.toEqual(rejection(grpc.status.ALREADY_EXISTS));
    await expect(
      client.Passwords.CreateUser({ email: 'not-an-email', password: 'x'.repeat(12) }),
    ).rejects.toEqual(rejection(grpc.status.INVALID_ARGUMENT));
    const long = 'é'.repeat(37); // 74 bytes
    const refused = client.Passwords.CreateUser({ email: 'bob@example.com', password: long });
    await expect(refused).rejects.toEqual(rejection(grpc.status.INVALID_ARGUMENT));
    const details = await refused.then(
      () => '',
      (error: unknown) => (error as { details: string }).details,
    );
    expect(details).toMatch(/at most 72 bytes/);
    expect(details).not.toContain(long);
    await expect(client.Passwords.CreateUser({ email: 'bob@example.com', password: '' })).rejects.toEqual(
      rejection(grpc.status.INVALID_ARGUMENT),
    );
    expect(
      await client.Passwords.CreateUser({ email: 'bob@example.com', password: 'a'.repeat(72) }),
    ).toMatchObject({
      email: 'bob@example.com',
    });
    for (const email of ['admin@svc.local', 'Guest@svc.local'])
      await expect(client.Passwords.CreateUser({ email, password: 'pw'.repeat(6) })).rejects.toEqual(
        rejection(grpc.status.FAILED_PRECONDITION),
      );
  });

  it('sets a password and ends the user’s sessions; refuses admin, guest and unknown users', async () => {
    const alice = fixture.store.findByLogin('alice@example.com')!;
    fixture.sessions.add({
      id: 's-alice',
      subject: alice.user_id,
      kind: 'browser',
      created_at: new Date().toISOString(),
    });
    await client.Passwords.SetPassword({ email: 'alice@example.com', password: 'battery staple horse' });
    const stored = fixture.store.findByLogin('alice@example.com')!;
    expect(await bcrypt.compare('battery staple horse', stored.password_hash)).toBe(true);
    expect(fixture.sessions.list().map((s) => s.id)).not.toContain('s-alice');
    for (const email of ['admin@svc.local', 'guest', 'admin'])
      await expect(client.Passwords.SetPassword({ email, password: 'pw'.repeat(6) })).rejects.toEqual(
        rejection(grpc.status.FAILED_PRECONDITION),
      );
    await expect(
      client.Passwords.SetPassword({ email: 'nobody@example.com', password: 'pw'.repeat(6) }),
    ).rejects.toEqual(rejection(grpc.status.NOT_FOUND));
    await expect(
      client.Passwords.SetPassword({ email: 'alice@example.com', password: 'x'.repeat(73) }),
    ).rejects.toEqual(rejection(grpc.status.INVALID_ARGUMENT));
  });

  it('deletes a created user (returning it); refuses admin, guest and unknown users', async () => {
    const deleted = await client.Passwords.DeleteUser({ email: 'bob@example.com' });
    expect(deleted.email).toBe('bob@example.com');
    expect(fixture.store.findByLogin('bob@example.com')).toBeUndefined();
    await expect(client.Passwords.DeleteUser({ email: 'bob@example.com' })).rejects.toEqual(
      rejection(grpc.status.NOT_FOUND),
    );
    for (const email of ['admin@svc.local', 'guest@svc.local'])
      await expect(client.Passwords.DeleteUser({ email })).rejects.toEqual(
        rejection(grpc.status.FAILED_PRECONDITION),
      );
    expect(fixture.store.findById('admin')).toBeDefined();
  });
});

describe('Clients', () => {
  it('lists the five OAuth clients of the spec', async () => {
    const { clients } = await client.Clients.ListClients({});
    expect(clients.map((c) => [c.client_id, c.type])).toEqual([
      ['svc-api', 'public'],
      ['svc-cli', 'public'],
      ['svc-web', 'public'],
      ['svc-mcp-user', 'public'],
      ['svc-automation', 'confidential'],
    ]);
  });

  it('regenerates the svc-automation secret into a 0600 file without returning it', async () => {
    const file = join(fixture.workDir, 'auth', 'secrets', 'automation-client');
    const info = await client.Clients.RegenerateAutomationSecret({});
    const first = await readFile(file, 'utf8');
    expect(first).toMatch(/^[0-9a-f]{64}\n$/);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(file)).nlink).toBe(1);
    expect(info).toMatchObject({ client_id: 'svc-automation', secret_present: true });
    expect(JSON.stringify(info)).not.toContain(first.trim());
    await client.Clients.RegenerateAutomationSecret({});
    const second = await readFile(file, 'utf8');
    expect(second).not.toBe(first);
    expect(fixture.automationSecrets).toEqual([first.trim(), second.trim()]);
    expect(
      (await readdir(join(fixture.workDir, 'auth', 'secrets'))).filter((n) => n.startsWith('.tmp')),
    ).toEqual([]);
    expect(JSON.stringify(fixture.audit)).not.toContain(second.trim());
  });
});

describe('Sessions', () => {
  it('lists and revokes sessions, running the provider’s revocation', async () => {
    const ended: string[] = [];
    fixture.sessions.add(
      {
        id: 'g-1',
        subject: 'guest',
        client_id: 'svc-cli',
        kind: 'refresh',
        created_at: '2025-01-01T00:00:00.000Z',
        expires_at: '2025-01-08T00:00:00.000Z',
      },
      (record) => void ended.push(record.id),
    );
    fixture.sessions.add({
      id: 'g-2',
      subject: 'admin',
      kind: 'browser',
      created_at: '2025-01-02T00:00:00.000Z',
    });
    expect((await client.Sessions.ListSessions({})).sessions).toEqual([
      {
        id: 'g-1',
        subject: 'guest',
        client_id: 'svc-cli',
        kind: 'refresh',
        created_at: '2025-01-01T00:00:00.000Z',
        expires_at: '2025-01-08T00:00:00.000Z',
      },
      {
        id: 'g-2',
        subject: 'admin',
        client_id: '',
        kind: 'browser',
        created_at: '2025-01-02T00:00:00.000Z',
        expires_at: '',
      },
    ]);
    await client.Sessions.RevokeSession({ id: 'g-1' });
    expect(ended).toEqual(['g-1']);
    expect((await client.Sessions.ListSessions({})).sessions.map((s) => s.id)).toEqual(['g-2']);
    await expect(client.Sessions.RevokeSession({ id: 'g-1' })).rejects.toEqual(
      rejection(grpc.status.NOT_FOUND),
    );
    await expect(client.Sessions.RevokeSession({ id: '' })).rejects.toEqual(
      rejection(grpc.status.INVALID_ARGUMENT),
    );
  });
});

describe('sign-in lockouts and password length', () => {
  it('UnlockUser clears the lockout of any user, static identities included; unknown users are NOT_FOUND', async () => {
    expect(await client.Passwords.UnlockUser({ email: 'admin' })).toEqual({
      email: 'admin@svc.local',
      user_id: 'admin',
      locks_cleared: 1,
    });
    expect(fixture.unlocked).toContain('admin');
    await expect(client.Passwords.UnlockUser({ email: 'nobody@example.com' })).rejects.toEqual(
      rejection(grpc.status.NOT_FOUND),
    );
    await expect(client.Passwords.UnlockUser({ email: ' ' })).rejects.toEqual(
      rejection(grpc.status.INVALID_ARGUMENT),
    );
  });

  it('a new password needs at least 12 characters (create and set)', async () => {
    const short = client.Passwords.CreateUser({ email: 'short@example.com', password: 'elevenchars' });
    await expect(short).rejects.toEqual(rejection(grpc.status.INVALID_ARGUMENT));
    expect(String(await short.catch((e: unknown) => e))).toMatch(/at least 12 characters/);
    await client.Passwords.CreateUser({ email: 'short@example.com', password: 'twelve chars' });
    await expect(
      client.Passwords.SetPassword({ email: 'short@example.com', password: 'too short' }),
    ).rejects.toEqual(rejection(grpc.status.INVALID_ARGUMENT));
  });
});

describe('Mfa', () => {
  it('gets and sets the MFA state of a created user; static identities are read-only', async () => {
    expect(await client.Mfa.GetMfa({ email: 'alice@example.com' })).toMatchObject({
      email: 'alice@example.com',
      enabled: false,
    });
    const enrolled = await client.Mfa.SetMfa({ email: 'alice@example.com', enabled: true });
    expect(enrolled).toMatchObject({ enabled: true });
    // The TOTP secret is shown this once (base32, 160 bits) with its otpauth URI, stored encrypted.
    expect(enrolled.secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(enrolled.otpauth_uri).toMatch(/^otpauth:\/\/totp\/svc:alice%40example\.com\?/);
    expect(enrolled.otpauth_uri).toContain(`secret=${enrolled.secret}`);
    const stored = fixture.store.findByLogin('alice@example.com')!;
    expect(stored.mfa_enabled).toBe(true);
    expect(stored.mfa_secret).toMatch(/^enc:v1:/);
    expect(stored.mfa_secret).not.toContain(enrolled.secret);
    expect(fixture.secrets.decrypt(stored.mfa_secret!)).toBe(enrolled.secret);
    expect(await client.Mfa.GetMfa({ email: 'alice@example.com' })).toMatchObject({
      enabled: true,
      secret: '',
      otpauth_uri: '',
    });
    expect(JSON.stringify(fixture.audit)).not.toContain(enrolled.secret);
    expect(await client.Mfa.GetMfa({ email: 'admin@svc.local' })).toEqual({
      email: 'admin@svc.local',
      user_id: 'admin',
      enabled: false,
      secret: '',
      otpauth_uri: '',
    });
    await client.Mfa.SetMfa({ email: 'alice@example.com', enabled: false });
    expect(fixture.store.findByLogin('alice@example.com')!.mfa_secret).toBeUndefined();
    await expect(client.Mfa.SetMfa({ email: 'admin@svc.local', enabled: true })).rejects.toEqual(
      rejection(grpc.status.FAILED_PRECONDITION),
    );
    await expect(client.Mfa.SetMfa({ email: 'guest', enabled: true })).rejects.toEqual(
      rejection(grpc.status.FAILED_PRECONDITION),
    );
    await expect(client.Mfa.GetMfa({ email: 'nobody@example.com' })).rejects.toEqual(
      rejection(grpc.status.NOT_FOUND),
    );
    await expect(client.Mfa.SetMfa({ email: 'nobody@example.com', enabled: true })).rejects.toEqual(
      rejection(grpc.status.NOT_FOUND),
    );
  });
});
