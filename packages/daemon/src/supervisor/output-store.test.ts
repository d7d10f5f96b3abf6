// OutputStore without a snapshot: a file whose oldest bytes the size cap released (a hole over
// [0, S)) is restored with start = S, so reads never return the hole's zeros.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OutputStore } from './output-store.ts';

let dir: string | undefined;
let store: OutputStore | undefined;
afterEach(() => {
  store?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  store = undefined;
  dir = undefined;
});

const query = { index: 0, maxSize: undefined, processUuid: undefined, timeoutMs: 0 };

describe('OutputStore restore without a snapshot', () => {
  it('finds the released prefix of a punched file and reads from after it', async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-output-'));
    const data = Buffer.alloc(200_000, 'x');
    writeFileSync(join(dir, 'app.out'), data);
    execFileSync('fallocate', ['--punch-hole', '--offset', '0', '--length', '65536', join(dir, 'app.out')]);
    writeFileSync(join(dir, 'plain.out'), data);
    writeFileSync(join(dir, 'zeros.out'), Buffer.alloc(10_000)); // real zeros, not a hole
    store = new OutputStore(dir);
    store.restore('app', undefined);
    store.restore('plain', undefined);
    store.restore('zeros', undefined);
    expect(store.files('app')[0]?.start).toBe(65536);
    expect(store.files('plain')[0]?.start).toBeUndefined();
    expect(store.files('zeros')[0]?.start).toBeUndefined();
    const chunk = await store.read('app', { ...query, position: 0 });
    expect(chunk.position).toBe(200_000);
    expect(chunk.output.length).toBe(200_000 - 65536);
    expect(chunk.output.every((b) => b === 0x78)).toBe(true);
  });
});
