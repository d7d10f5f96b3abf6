import { describe, expect, it } from 'vitest';
import { SessionTable, type TableEntry } from './session-table.ts';

let next = 0;
function entry(principal: string, lastSeen: number, busy = 0): TableEntry {
  next += 1;
  return { id: `s${next}`, principal, lastSeen, used: lastSeen, busy };
}

function fill(table: SessionTable<TableEntry>, principal: string, count: number, from = 0): TableEntry[] {
  const added = Array.from({ length: count }, (_, i) => entry(principal, from + i));
  for (const session of added) table.add(session);
  return added;
}

describe('SessionTable', () => {
  it('admits below both caps without closing anything', () => {
    const table = new SessionTable({ maxSessions: 4, perPrincipal: 2, idleMs: 1000 });
    fill(table, 'a', 1);
    expect(table.admit('a')).toEqual({ admit: true, evict: undefined });
    expect(table.admit('b')).toEqual({ admit: true, evict: undefined });
  });

  it("at a principal's cap, gives up that principal's least recently used idle session", () => {
    const table = new SessionTable({ maxSessions: 100, perPrincipal: 3, idleMs: 1000 });
    const [oldest, middle] = fill(table, 'a', 3, 10);
    fill(table, 'b', 3, 0); // older, but another principal's
    expect(table.admit('a')).toEqual({ admit: true, evict: oldest });
    oldest!.busy = 1; // a request in flight: an idle one goes first
    expect(table.admit('a')).toEqual({ admit: true, evict: middle });
  });

  it("refuses (429) at a principal's cap when every one of its sessions is busy", () => {
    const table = new SessionTable({ maxSessions: 100, perPrincipal: 2, idleMs: 1000 });
    for (const session of fill(table, 'a', 2)) session.busy = 1;
    const admission = table.admit('a');
    expect(admission.admit).toBe(false);
    expect(admission).toMatchObject({ status: 429 });
  });

  it('when full, takes the session from the principal holding the most, never from a smaller holder', () => {
    const table = new SessionTable({ maxSessions: 10, perPrincipal: 5, idleMs: 1000 });
    fill(table, 'small', 2, 0); // the oldest sessions of all
    const [, big2] = fill(table, 'big', 5, 100);
    fill(table, 'mid', 3, 50);
    const admission = table.admit('admin');
    expect(admission.admit).toBe(true);
    expect(admission.admit && admission.evict?.principal).toBe('big');
    expect(admission.admit && admission.evict?.lastSeen).toBe(100);
    // Even a busy session of the largest holder gives way, after its idle ones.
    for (const session of table.ofPrincipal('big')) session.busy = 1;
    big2!.busy = 0;
    expect(table.admit('admin')).toEqual({ admit: true, evict: big2 });
    for (const session of table.ofPrincipal('big')) session.busy = 1;
    const busy = table.admit('admin');
    expect(busy.admit && busy.evict?.principal).toBe('big');
  });

  it('when full, a newcomer that would become the largest holder gives up its own session', () => {
    const table = new SessionTable({ maxSessions: 6, perPrincipal: 5, idleMs: 1000 });
    const [own] = fill(table, 'a', 3, 10);
    fill(table, 'b', 3, 0);
    // a would hold 4, b holds 3: a's own least recently used session goes.
    expect(table.admit('a')).toEqual({ admit: true, evict: own });
  });

  it('between equal holders, takes the least recently used session', () => {
    const table = new SessionTable({ maxSessions: 6, perPrincipal: 5, idleMs: 1000 });
    fill(table, 'a', 3, 10);
    const [oldest] = fill(table, 'b', 3, 5);
    expect(table.admit('c')).toEqual({ admit: true, evict: oldest });
  });

  it('a crowd at the per-principal cap filling the table cannot lock anybody out', () => {
    const table = new SessionTable({ maxSessions: 256, perPrincipal: 16, idleMs: 1000 });
    let clock = 0;
    let refused = 0;
    for (let round = 0; round < 16; round += 1)
      for (let p = 0; p < 17; p += 1) {
        const admission = table.admit(`crowd-${p}`);
        if (!admission.admit) {
          refused += 1;
          continue;
        }
        if (admission.evict !== undefined) table.remove(admission.evict);
        table.add(entry(`crowd-${p}`, (clock += 1)));
      }
    expect(refused).toBe(0);
    expect(table.size).toBe(256);
    for (let p = 0; p < 17; p += 1) expect(table.countOf(`crowd-${p}`)).toBeLessThanOrEqual(16);
    const admin = table.admit('admin');
    expect(admin.admit).toBe(true);
    expect(admin.admit && admin.evict?.principal).toMatch(/^crowd-/);
  });

  it('expires idle sessions only, idleMs after their last request', () => {
    const table = new SessionTable({ maxSessions: 10, perPrincipal: 10, idleMs: 1000 });
    const idle = entry('a', 0);
    const recent = entry('a', 500);
    const streaming = entry('a', 0, 1);
    for (const session of [idle, recent, streaming]) table.add(session);
    expect(table.expired(1000)).toEqual([]);
    expect(table.expired(1001)).toEqual([idle]);
    expect(table.expired(5000)).toEqual([idle, recent]);
  });

  it('removes a session once; a stale copy with the same id is not removed', () => {
    const table = new SessionTable({ maxSessions: 10, perPrincipal: 10, idleMs: 1000 });
    const session = entry('a', 0);
    table.add(session);
    expect(table.remove({ ...session })).toBe(false);
    expect(table.remove(session)).toBe(true);
    expect(table.remove(session)).toBe(false);
    expect(table.size).toBe(0);
    expect(table.countOf('a')).toBe(0);
  });
});
