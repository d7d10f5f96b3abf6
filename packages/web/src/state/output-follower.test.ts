import { describe, expect, it } from 'vitest';
import { OutputFollower } from './output-follower.ts';

describe('OutputFollower', () => {
  it('appends events that start at its position and counts bytes, not characters', () => {
    const f = new OutputFollower({ processUuid: 'p1' });
    expect(f.accept({ output: 'héllo\n', position: 0, process_uuid: 'p1' })).toBe('appended');
    expect(f.next).toBe(7);
    expect(f.accept({ output: 'world\n', position: 7, process_uuid: 'p1' })).toBe('appended');
    expect(f.text).toBe('héllo\nworld\n');
    expect(f.next).toBe(13);
  });

  it('drops a repeated event and reports a gap for one that starts further on', () => {
    const f = new OutputFollower({ processUuid: 'p1' });
    f.accept({ output: 'abc', position: 0, process_uuid: 'p1' });
    expect(f.accept({ output: 'abc', position: 0, process_uuid: 'p1' })).toBe('duplicate');
    expect(f.accept({ output: 'xyz', position: 10, process_uuid: 'p1' })).toBe('gap');
    expect(f.text).toBe('abc');
  });

  it('fills a gap from a read at its position and ignores a read from elsewhere', () => {
    const f = new OutputFollower({ processUuid: 'p1' });
    f.accept({ output: 'abc', position: 0, process_uuid: 'p1' });
    const read = { output: 'defg', bytes: 4, nextPosition: 7, processUuid: 'p1', exitCode: undefined };
    expect(f.applyRead({ ...read, position: 5 })).toBe(false);
    expect(f.applyRead({ ...read, position: 3 })).toBe(true);
    expect(f.text).toBe('abcdefg');
    expect(f.accept({ output: 'efg', position: 4, process_uuid: 'p1' })).toBe('duplicate');
    expect(f.accept({ output: 'h', position: 7, process_uuid: 'p1', finished: true })).toBe('appended');
    expect(f.finished).toBe(true);
  });

  it('starts a new section at byte 0 for a new process', () => {
    const f = new OutputFollower({ processUuid: 'p1' });
    f.accept({ output: 'one', position: 0, process_uuid: 'p1' });
    expect(f.accept({ output: 'two\n', position: 0, process_uuid: 'p2-abcdefgh' })).toBe('appended');
    expect(f.processUuid).toBe('p2-abcdefgh');
    expect(f.next).toBe(4);
    expect(f.text).toMatch(/^one\n.*new process p2-abcde.*\ntwo\n$/s);
  });

  it('keeps at most maxChars, dropping the oldest', () => {
    const f = new OutputFollower({ maxChars: 10, processUuid: 'p' });
    for (let i = 0; i < 5; i++) f.accept({ output: 'abcd', position: i * 4, process_uuid: 'p' });
    expect(f.text).toBe('cdabcdabcd');
    expect(f.dropped).toBe(10);
    expect(f.next).toBe(20);
  });

  it('survives hostile event data: huge positions, empty output, no uuid', () => {
    const f = new OutputFollower();
    expect(f.accept({ output: '', position: Number.MAX_SAFE_INTEGER })).toBe('gap');
    expect(f.accept({ output: '', position: 0 })).toBe('appended');
    expect(f.text).toBe('');
  });
});
