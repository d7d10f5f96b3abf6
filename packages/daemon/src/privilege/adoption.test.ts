import { describe, expect, it } from 'vitest';
import { adoptionRefusal, readProcessFacts, type AdoptionRules, type ProcessFacts } from './adoption.ts';
import { signalGroup, signalProcess, signallable } from './signals.ts';

const user = (uid: number, pgid = 5000): ProcessFacts => ({ uids: [uid, uid, uid, uid], pgid, kernelThread: false });
const rules = (callerUid: number): AdoptionRules => ({
  callerUid,
  protectedPids: new Set([100, 200, 300]),
  protectedGroups: new Set([100, 200]),
});

describe('adoptionRefusal', () => {
  it("allows a process all of whose uids are the caller's execution user", () => {
    expect(adoptionRefusal(4000, user(1001), rules(1001))).toBeUndefined();
  });

  it('refuses a process of another user, or one with any other uid (a setuid program)', () => {
    expect(adoptionRefusal(4000, user(0), rules(1001))).toMatch(/does not belong/);
    expect(adoptionRefusal(4000, user(1002), rules(1001))).toMatch(/does not belong/);
    for (const i of [0, 1, 2, 3]) {
      const uids = [1001, 1001, 1001, 1001];
      uids[i] = 0;
      expect(adoptionRefusal(4000, { uids, pgid: 4000, kernelThread: false }, rules(1001))).toMatch(/does not belong/);
    }
  });

  it('lets a caller running as root adopt any process of the host but svc itself, init and kernel threads', () => {
    expect(adoptionRefusal(4000, user(1002), rules(0))).toBeUndefined();
    expect(adoptionRefusal(4000, user(0), rules(0))).toBeUndefined();
  });

  it('never pid 1 (or below), a kernel thread, svcd, svc-spawner, a system app or their groups, whoever asks', () => {
    for (const caller of [0, 1001]) {
      expect(adoptionRefusal(1, user(caller, 1), rules(caller))).toMatch(/init/);
      expect(adoptionRefusal(0, user(caller), rules(caller))).toMatch(/init/);
      expect(adoptionRefusal(-1, user(caller), rules(caller))).toMatch(/init/);
      expect(adoptionRefusal(4000, { ...user(caller), kernelThread: true }, rules(caller))).toMatch(/kernel thread/);
      for (const pid of [100, 200, 300]) expect(adoptionRefusal(pid, user(caller), rules(caller))).toMatch(/svc itself/);
      expect(adoptionRefusal(4000, user(caller, 200), rules(caller))).toMatch(/svc itself/);
    }
  });
});

describe('readProcessFacts', () => {
  it('reads the uids and the group of a live process, and knows kernel threads', () => {
    const own = readProcessFacts(process.pid);
    expect(own?.uids).toEqual(Array(4).fill(process.getuid?.()));
    expect(own?.kernelThread).toBe(false);
    expect(readProcessFacts(2)?.kernelThread).toBe(true); // kthreadd
    expect(readProcessFacts(2 ** 22 + 1)).toBeUndefined();
  });
});

describe('signals', () => {
  it('can never reach every process (-1), its own group (0), init or svcd itself', () => {
    for (const pid of [-1, 0, 1, Number.NaN, 1.5, process.pid]) {
      expect(signallable(pid)).toBe(false);
      // Signal 0 only checks: a refusal returns false before any kill(2).
      expect(signalGroup(pid, 0)).toBe(false);
      expect(signalProcess(pid, 0)).toBe(false);
    }
    expect(signallable(2 ** 22 + 1)).toBe(true);
    expect(signalProcess(2 ** 22 + 1, 0)).toBe(false); // no such process
  });
});
