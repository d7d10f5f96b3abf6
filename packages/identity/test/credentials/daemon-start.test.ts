// svcd in builtin mode: a fresh start creates the credential files; a violating file refuses the
// start with a message naming the file, the line and the rule.
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestDaemon } from '@svc/testkit';
import bcrypt from 'bcryptjs';
import { describe, expect, it } from 'vitest';
import { formatCredentialFile, newCredential } from '../../src/credentials/credential-file.ts';

const BUILTIN = { SVC_AUTH_MODE: 'builtin' };

describe('svcd start with credential files (builtin mode)', () => {
  it('creates the credential files on a fresh start', async () => {
    await using daemon = await startTestDaemon({ env: BUILTIN });
    const secrets = join(daemon.workDir, 'auth', 'secrets');
    for (const name of ['initial-admin-credentials', 'initial-viewer-credentials', 'automation-client'])
      expect((await stat(join(secrets, name))).mode & 0o777).toBe(0o600);
    expect(await readFile(join(secrets, 'initial-admin-credentials'), 'utf8')).toMatch(
      /^username=admin\nemail=admin@svc\.local\nuser_id=admin\npassword_hash=\$2b\$10\$[./A-Za-z0-9]{53}\npassword=[0-9a-f]{48}\n$/,
    );
    expect(daemon.stderr()).not.toMatch(/password=|\$2b\$10\$/);
  });

  it('refuses to start on a cost-12 hash, naming file, line and rule', async () => {
    const hash = await bcrypt.hash('pw', 12);
    const text = formatCredentialFile(newCredential('admin', hash, 'pw'));
    const error = await startTestDaemon({
      env: BUILTIN,
      files: { 'work/auth/secrets/initial-admin-credentials': text },
    }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(
      /svcd: cannot start: \S+\/work\/auth\/secrets\/initial-admin-credentials:4: password_hash must have bcrypt cost exactly 10 \(it has cost 12\)/,
    );
    expect(error?.message).not.toContain(hash.slice(7));
  });

  it('refuses to start on a wrong identity field in the viewer file', async () => {
    const hash = await bcrypt.hash('pw', 10);
    const text = formatCredentialFile({ ...newCredential('guest', hash), email: 'viewer@example.org' });
    await expect(
      startTestDaemon({ env: BUILTIN, files: { 'work/auth/secrets/initial-viewer-credentials': text } }),
    ).rejects.toThrow(
      /initial-viewer-credentials:2: email must be "guest@svc\.local" verbatim \(the packaged guest identity\)/,
    );
  });
});
