// Full stack, builtin mode: the administrator-credential actions of svc-auth.sh against one real
// svcd whose svc-identity reads the credential file at each start. `restart` is what restarting svc
// does: svcd and the application process groups it supervises stop, then svcd starts again on the
// same home (stopping svcd alone leaves its applications, svc-identity included, running).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAuthStack, type AuthStack } from './stack.ts';

let stack: AuthStack;
beforeAll(async () => {
  stack = await startAuthStack({ adminUi: false, env: { SVC_AUTH_ADMIN_UI: 'off' } });
});
afterAll(async () => {
  await stack?.close();
});

async function printed(): Promise<string> {
  const run = await stack.script(['print-initial-password']);
  if (run.code !== 0) throw new Error(`print-initial-password exited ${run.code}: ${run.stderr}`);
  return run.stdout.trimEnd();
}

/** Exit code of `user-token` (admin) with `password` on stdin; the token is checked against svcd. */
async function signIn(password: string): Promise<'admin' | 'refused'> {
  const run = await stack.script(['user-token'], { stdin: `${password}\n` });
  if (run.code === 1 && /token request refused: 401/.test(run.stderr)) return 'refused';
  if (run.code !== 0) throw new Error(`user-token exited ${run.code}: ${run.stderr}`);
  const self = await stack.call('GET', '/svc/self', run.stdout.trim());
  return self.json<{ principal_id: string }>().principal_id === 'admin' ? 'admin' : 'refused';
}

describe('administrator password actions against a real svcd (builtin mode)', () => {
  it('rotate-initial-password: pending until restart; then the new one works and the old one gets 401', async () => {
    const old = await printed();
    const rotated = await stack.script(['rotate-initial-password']);
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.stdout).toBe('');
    const next = await printed();
    expect(/^[0-9a-f]{48}$/.test(next), 'a new 48-hex password').toBe(true);
    expect(next === old, 'the rotated password differs').toBe(false);
    expect(await signIn(old)).toBe('admin'); // pending: the running provider keeps the old hash
    expect(await signIn(next)).toBe('refused');

    await stack.restart();
    expect(await signIn(next)).toBe('admin');
    expect(await signIn(old)).toBe('refused');
  });

  it('set-initial-password: stdin of at most 72 bytes (73 refused), pending until restart', async () => {
    const current = await printed();
    const tooLong = await stack.script(['set-initial-password'], { stdin: `${'x'.repeat(73)}\n` });
    expect(tooLong.code).toBe(1);
    expect(tooLong.stderr).toMatch(/72 bytes/);
    expect(tooLong.stderr).not.toContain('x'.repeat(73));
    expect(await printed()).toBe(current); // unchanged

    const chosen = 'é'.repeat(36); // 72 bytes of UTF-8: the limit is in bytes
    const set = await stack.script(['set-initial-password'], { stdin: `${chosen}\n` });
    expect(set.code, set.stderr).toBe(0);
    expect(set.stderr).not.toContain(chosen);
    expect(await printed()).toBe(chosen); // the plaintext line is kept
    expect(await signIn(current)).toBe('admin');
    expect(await signIn(chosen)).toBe('refused');

    await stack.restart();
    expect(await signIn(chosen)).toBe('admin');
    expect(await signIn(current)).toBe('refused');
  });

  it('forget-initial-password: print-initial-password stops working, the password still works', async () => {
    const current = await printed();
    const forgot = await stack.script(['forget-initial-password']);
    expect(forgot.code, forgot.stderr).toBe(0);
    expect(forgot.stderr).toMatch(/plaintext line removed; the password is unchanged/);
    const gone = await stack.script(['print-initial-password']);
    expect(gone.code).toBe(1);
    expect(gone.stdout).toBe('');
    expect(gone.stderr).toMatch(/no password= line.*rotate-initial-password is the only recovery path/);
    expect(await signIn(current)).toBe('admin');
    // Also across a restart: svcd accepts a credential file without the plaintext line.
    await stack.restart();
    expect(await signIn(current)).toBe('admin');
  });
});
