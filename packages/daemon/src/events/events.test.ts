// Unit tests of the event vocabulary, the UTF-8 boundary helper and the subscription registry.
import { describe, expect, it } from 'vitest';
import { SvcError } from '@svc/protocol';
import type { PersistentConnection } from '../api/types.ts';
import type { Principal } from '../auth/principal.ts';
import { ALL_EVENTS, eventList, parseEventList } from './event-names.ts';
import { ALL_APPS, SubscriptionRegistry, type Subscription } from './subscription-registry.ts';
import { completeUtf8Length } from './utf8.ts';

describe('parseEventList', () => {
  it('empty, missing and ALL select every event', () => {
    for (const value of [undefined, '', ' ', 'ALL', 'all', 'START,ALL']) {
      const s = parseEventList(value);
      expect(s.all).toBe(true);
      expect(eventList(s.events)).toEqual([...ALL_EVENTS]);
    }
  });
  it('names are trimmed, case-insensitive, deduplicated, empty items ignored', () => {
    const s = parseEventList(' exit,START,,exit, stdout ');
    expect(s.all).toBe(false);
    expect(eventList(s.events)).toEqual(['START', 'EXIT', 'STDOUT']);
  });
  it('an unknown name is invalid_query naming it and the parameter', () => {
    try {
      parseEventList('START,BOOT', 'subscribe_events');
      expect.fail('no error');
    } catch (error) {
      expect(error).toBeInstanceOf(SvcError);
      expect((error as SvcError).code).toBe('invalid_query');
      expect((error as SvcError).message).toMatch(/subscribe_events.*BOOT/);
    }
    expect(() => parseEventList('__disconnected__')).toThrow(SvcError);
    expect(() => parseEventList('x'.repeat(300))).toThrow(SvcError);
  });
});

describe('completeUtf8Length', () => {
  it('keeps complete text and cuts an incomplete trailing sequence', () => {
    const text = Buffer.from('aé日🎉');
    expect(completeUtf8Length(text)).toBe(text.length);
    // Every cut point inside the text: the prefix kept decodes without a replacement character.
    for (let n = 0; n <= text.length; n++) {
      const cut = completeUtf8Length(text, n);
      expect(cut).toBeLessThanOrEqual(n);
      expect(n - cut).toBeLessThan(4);
      expect(text.toString('utf8', 0, cut)).not.toContain('\uFFFD');
      expect(Buffer.from(text.toString('utf8', 0, cut)).length).toBe(cut);
    }
  });
  it('keeps invalid bytes (holding them back would never help)', () => {
    expect(completeUtf8Length(Buffer.from([0x61, 0xff]))).toBe(2);
    expect(completeUtf8Length(Buffer.from([0x80, 0x80, 0x80, 0x80]))).toBe(4);
    expect(completeUtf8Length(Buffer.from([]))).toBe(0);
    expect(completeUtf8Length(Buffer.from([0xf0, 0x9f]))).toBe(0);
  });
  it('reassembles any split of a multi-byte text intact', () => {
    const text = 'héllo wörld — 日本語 🎉\n'.repeat(5);
    const bytes = Buffer.from(text);
    for (let step = 1; step <= 7; step++) {
      // Simulate reads of `step` new bytes at a time, re-reading what was held back.
      let out = '';
      let position = 0;
      let available = 0;
      while (position < bytes.length) {
        available = Math.min(bytes.length, available + step);
        const chunk = bytes.subarray(position, available);
        const cut = available === bytes.length ? chunk.length : completeUtf8Length(chunk);
        out += chunk.toString('utf8', 0, cut);
        position += cut;
      }
      expect(out).toBe(text);
    }
  });
});

describe('SubscriptionRegistry', () => {
  const principal: Principal = {
    id: 'p',
    roles: [],
    status: 'active',
    permissions: new Set(),
    expiresAt: 0,
  };
  const connection = (id: string): PersistentConnection => ({
    id,
    transport: 'tcp',
    principalId: 'p',
    push: () => true,
    onClose: () => undefined,
    close: () => undefined,
  });
  const make = (id: string, app: string, events: string[], conn: PersistentConnection): Subscription => ({
    id,
    app,
    events: new Set(events) as Subscription['events'],
    principal,
    connection: conn,
    outputAllowed: true,
    sequence: 0,
    active: true,
    bodyHead: '',
    decisions: new Map(),
  });

  it('indexes by id, app and connection, and counts STDOUT interest per app and for all apps', () => {
    const registry = new SubscriptionRegistry();
    const c1 = connection('c1');
    const c2 = connection('c2');
    const a = make('a', 'app1', ['STDOUT'], c1);
    const b = make('b', 'app1', ['STATUS'], c2);
    const w = make('w', ALL_APPS, ['STDOUT'], c2);
    registry.add(a);
    registry.add(b);
    expect(registry.size).toBe(2);
    expect(registry.wantsStdout('app1')).toBe(true);
    expect(registry.wantsStdout('app2')).toBe(false);
    registry.add(w);
    expect(registry.wantsStdout('app2')).toBe(true);
    expect([...registry.ofConnection('c2')!].map((s) => s.id)).toEqual(['b', 'w']);
    expect([...registry.ofApp('app1')!].map((s) => s.id)).toEqual(['a', 'b']);
    expect([...registry.wildcard()!].map((s) => s.id)).toEqual(['w']);
    expect(registry.remove(w)).toBe(true);
    expect(w.active).toBe(false);
    expect(registry.remove(w)).toBe(false);
    expect(registry.wantsStdout('app2')).toBe(false);
    expect(registry.wildcard()).toBeUndefined();
    registry.remove(a);
    expect(registry.wantsStdout('app1')).toBe(false);
    expect(registry.get('b')).toBe(b);
    registry.remove(b);
    expect(registry.size).toBe(0);
    expect(registry.ofConnection('c2')).toBeUndefined();
  });
});
