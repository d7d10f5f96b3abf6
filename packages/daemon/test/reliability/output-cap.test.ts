// Issue 12 item 14: a chatty app wrote 150 MB into one output file (no size cap). With a cap
// (SVC_OUTPUT_MAX_BYTES) a real chatty child writes 30 MB: a client reading by position over the
// API receives every byte exactly once, in order (positions never jump), while the file's space
// on disk stays bounded by the cap; a late reader starts at the oldest byte still held (never the
// released bytes' zeros), and the positions are those of the process's whole output.
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ok, trackDaemons } from '../robustness/helpers.ts';
import { stdoutText, subscribe, waitEvents } from '../events/helpers.ts';

const { start } = trackDaemons();
const CAP = 4 * 1024 * 1024;
const LINE = 10; // '%09d\n'
const LINES_PER_CHUNK = 10_000;
const CHUNKS = 300; // 30 MB at ~3 MB/s
const TOTAL = CHUNKS * LINES_PER_CHUNK * LINE;
const CHATTY = [
  'python3 -c "',
  'import sys, time',
  `for k in range(${CHUNKS}):`,
  `    n = k * ${LINES_PER_CHUNK}`,
  `    sys.stdout.write(''.join('%09d\\n' % (n + i) for i in range(${LINES_PER_CHUNK})))`,
  '    sys.stdout.flush()',
  '    time.sleep(0.033)',
  '"',
].join('\n');
/** Disk bound: the cap, plus what the child writes in one check interval on a loaded machine. */
const DISK_BOUND = 8 * 1024 * 1024;

/** The expected bytes at [from, from + length) of the child's output. */
function expected(from: number, length: number): Buffer {
  const first = Math.floor(from / LINE);
  const last = Math.ceil((from + length) / LINE);
  let text = '';
  for (let n = first; n < last; n++) text += `${String(n).padStart(9, '0')}\n`;
  return Buffer.from(text).subarray(from - first * LINE, from - first * LINE + length);
}

describe('output size cap (issue 12 item 14)', () => {
  it('a reader by position gets every byte once while disk stays bounded', async () => {
    const daemon = await start({ env: { SVC_OUTPUT_MAX_BYTES: String(CAP) } });
    const token = await daemon.token('admin');
    const rest = daemon.rest();
    // A STDOUT subscriber too: its event positions must stay continuous across the releases.
    const client = await daemon.tcp();
    const sub = await subscribe(client, token, undefined, 'STDOUT');
    ok(
      await rest.call('PUT', '/svc/app/chatty', {
        token,
        body: { name: 'chatty', command: CHATTY, shell: true, behavior: { exit: 'standby' } },
      }),
      'PUT chatty',
    );
    const file = join(daemon.workDir, 'stdout', 'chatty.out');
    let position = 0;
    let maxDisk = 0;
    let reads = 0;
    const deadline = Date.now() + 120_000;
    for (;;) {
      const r = await rest.call('GET', '/svc/app/chatty/output', {
        token,
        query: { stdout_position: String(position), timeout: '2' },
      });
      expect(r.status, r.text()).toBe(200);
      const next = Number(r.headers['x-output-position']);
      expect(next, `read ${reads}: positions continue with no gap`).toBe(position + r.body.length);
      if (r.body.length > 0 && !r.body.equals(expected(position, r.body.length)))
        throw new Error(`read ${reads} at ${position}: bytes differ from what the child wrote`);
      position = next;
      reads++;
      try {
        maxDisk = Math.max(maxDisk, statSync(file).blocks * 512);
      } catch {
        // not created yet
      }
      if (r.headers['x-exit-code'] !== undefined) {
        expect(r.headers['x-exit-code']).toBe('0');
        break;
      }
      if (Date.now() > deadline) throw new Error(`timed out at position ${position} of ${TOTAL}`);
    }
    expect(position, 'total bytes read over the API = bytes written').toBe(TOTAL);
    const { size, blocks } = statSync(file);
    expect(size, 'offsets are those of the whole output').toBe(TOTAL);
    expect(maxDisk, 'disk used by the file while it ran').toBeLessThanOrEqual(DISK_BOUND);
    expect(blocks * 512).toBeLessThanOrEqual(DISK_BOUND);
    const events = await waitEvents(
      client,
      sub.subscription_id,
      (list) => list.some((e) => (e.data as { finished?: boolean }).finished === true),
      'the final STDOUT event',
      60_000,
    );
    const streamed = Buffer.from(stdoutText(events)); // checks each position continues the last
    expect(streamed.length, 'STDOUT events carried every byte').toBe(TOTAL);
    expect(streamed.equals(expected(0, TOTAL)), 'STDOUT events carried the bytes written').toBe(true);
    console.log(
      `[reliability] output cap ${CAP} B: ${TOTAL} B written and read in ${reads} reads; ` +
        `max ${maxDisk} B on disk, ${blocks * 512} B at the end`,
    );

    // A late reader from 0 starts at the oldest byte held: real output, at its real position.
    const late = await rest.call('GET', '/svc/app/chatty/output', { token, query: { stdout_position: '0' } });
    const end = Number(late.headers['x-output-position']);
    const from = end - late.body.length;
    expect(from).toBeGreaterThan(0);
    expect(from).toBeGreaterThanOrEqual(TOTAL - DISK_BOUND);
    expect(late.body.equals(expected(from, late.body.length))).toBe(true);

    // The first kept position is durable: a new daemon serves the same bytes (never the zeros).
    await daemon.stop();
    const again = await start({
      home: daemon.home,
      issuer: daemon.issuer,
      env: { SVC_OUTPUT_MAX_BYTES: String(CAP) },
    });
    const after = await again.rest().call('GET', '/svc/app/chatty/output', {
      token: await again.token('admin'),
      query: { stdout_position: '0' },
    });
    expect(Number(after.headers['x-output-position']) - after.body.length).toBe(from);
    expect(after.body.equals(late.body)).toBe(true);
  });
});
