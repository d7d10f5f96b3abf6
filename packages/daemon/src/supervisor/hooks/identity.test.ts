// Execution users with a fake user database: who a start runs as, and who may replace whose app.
import { describe, expect, it } from 'vitest';
import { parseAppDefinition } from '../../model/app-definition.ts';
import type { OsIdentity } from '../../privilege/os-user.ts';
import { fakeApp } from '../test-fakes.ts';
import type { SpawnPreparation } from './hook.ts';
import { ExecutionUsers, IdentityHook } from './identity.ts';

const identity = (user: string, uid: number): OsIdentity => ({
  user,
  uid,
  gid: uid,
  groups: [uid],
  home: `/home/${user}`,
});
const database = new Map([
  ['alice', identity('alice', 1001)],
  ['bob', identity('bob', 1002)],
  ['root', identity('root', 0)],
]);
/** Principals and the OS user each runs as (absent: the daemon's own user). */
const execUsers: Record<string, string> = { p1: 'alice', p2: 'bob', p3: 'ghost', admin: 'root', p4: 'alice' };
const users = new ExecutionUsers(
  (owner) => (owner === undefined ? undefined : execUsers[owner]),
  (name) => database.get(name),
  () => 4242, // the daemon's uid
);
const def = (owner: string, extra: Record<string, unknown> = {}) => {
  const d = parseAppDefinition({ name: 'app', command: 'x', ...extra }, { now: 0, trusted: true });
  if (owner !== undefined) d.owner_principal_id = owner;
  return d;
};

describe('ExecutionUsers and IdentityHook', () => {
  it("a start runs as the owner's execution user; a system app, or an owner without one, as the daemon", () => {
    expect(users.identityOf(def('p1'))?.user).toBe('alice');
    expect(users.identityOf(def('nobody-configured'))).toBeUndefined();
    expect(users.identityOf(def('p1', { system: true }))).toBeUndefined();
    const spawn: SpawnPreparation = { processUuid: 'u', env: {}, outputFd: -1 };
    const { app } = fakeApp();
    new IdentityHook(
      new ExecutionUsers(
        () => 'bob',
        (n) => database.get(n),
      ),
    ).prestart(app, spawn);
    expect(spawn.user?.uid).toBe(1002);
  });

  it('an execution user that does not exist fails the start (never the daemon user instead)', () => {
    expect(() => users.identityOf(def('p3'))).toThrow('execution user ghost does not exist on this host');
    const spawn: SpawnPreparation = { processUuid: 'u', env: {}, outputFd: -1 };
    const { app } = fakeApp();
    const hook = new IdentityHook(
      new ExecutionUsers(
        () => 'ghost',
        (n) => database.get(n),
      ),
    );
    expect(() => hook.prestart(app, spawn)).toThrow(/ghost/);
    expect(spawn.user).toBeUndefined();
  });

  it('executionUid: the execution user, the daemon uid without one, undefined when it is gone', () => {
    expect(users.executionUid(def('p1'))).toBe(1001);
    expect(users.executionUid(def('unconfigured'))).toBe(4242);
    expect(users.executionUid(def('p3'))).toBeUndefined();
  });

  it("replacing another principal's app: only as the owner's own OS user or as root", () => {
    expect(() => users.refuseActingAsOwner(def('p1'), 'p4')).not.toThrow(); // both alice
    expect(() => users.refuseActingAsOwner(def('p1'), 'admin')).not.toThrow(); // root
    expect(() => users.refuseActingAsOwner(def('p1'), 'p2')).toThrow(
      expect.objectContaining({ code: 'forbidden' }),
    );
    expect(() => users.refuseActingAsOwner(def('p1'), 'p3')).toThrow(
      expect.objectContaining({ code: 'forbidden' }),
    );
    // Owner and caller without an execution user both run as the daemon's user.
    expect(() => users.refuseActingAsOwner(def('x'), 'y')).not.toThrow();
  });
});
