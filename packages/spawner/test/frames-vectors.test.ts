// svc-spawner's half of the protocol against spec/spawner-vectors.json (svcd's half is
// packages/daemon/src/supervisor/spawner/spawner-vectors.test.ts). frames-test.c includes
// svc-spawner.c whole; it is compiled here by build.js (the compiler and flags of the real binary)
// and fed every case: the C decoder must read each request to exactly its fields and refuse each
// malformed one, on the socket and in `svc-spawner exec`; the C encoder must write each reply and
// each exec status to exactly its bytes.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  messageSpec,
  SPAWNER_LIMITS,
  type DecodedFields,
  type FieldType,
  type FieldValue,
  type SpawnerVector,
} from '@svc/daemon';

const BUILD = resolve(import.meta.dirname, '../build.js');
const SOURCE = resolve(import.meta.dirname, 'frames-test.c');
const vectors = JSON.parse(
  readFileSync(resolve(import.meta.dirname, '../../../spec/spawner-vectors.json'), 'utf8'),
) as SpawnerVector[];

/** A value as frames-test.c's `encode` reads it: numbers in decimal, flags 0/1, strings as hex. */
function words(type: FieldType, value: FieldValue | undefined): string[] {
  if (typeof type === 'object') {
    if ('list' in type) {
      const items = value as readonly FieldValue[];
      return [String(items.length), ...items.flatMap((item) => words(type.list, item))];
    }
    if ('record' in type) {
      const record = value as { readonly [field: string]: FieldValue };
      return type.record.flatMap((f) => words(f.type, record[f.name]));
    }
    throw new Error('no reply has an optional field');
  }
  if (type === 'flag') return [value === true ? '1' : '0'];
  if (type === 'str') return [Buffer.from(value as string).toString('hex') || '-'];
  if (typeof value !== 'number') throw new Error(`${type} field holds ${JSON.stringify(value)}`);
  return [String(value)];
}

function encodeCommand(decoded: DecodedFields): string {
  const spec = messageSpec('reply', decoded.type);
  return ['encode', decoded.type, ...spec.fields.flatMap((f) => words(f.type, decoded[f.name]))].join(' ');
}

let dir: string;
/** frames-test's answer to each command, by command. */
const answers = new Map<string, string>();

function answer(command: string): unknown {
  const line = answers.get(command);
  expect(line, `frames-test answered ${command.slice(0, 80)}`).toBeDefined();
  return line === 'refused' ? 'refused' : line?.startsWith('{') ? JSON.parse(line) : line;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'svc-spawner-frames-'));
  const binary = join(dir, 'frames-test');
  const build = spawnSync(process.execPath, [BUILD, '--strict', SOURCE, binary], { encoding: 'utf8' });
  expect(build.stderr).toBe('');
  expect(build.status).toBe(0);
  const commands = ['limits'];
  for (const v of vectors) {
    if (v.kind === 'request') commands.push(`decode ${v.hex}`, `exec ${v.hex}`);
    if (v.kind === 'reply' && v.decoded !== undefined)
      commands.push(encodeCommand(v.decoded as DecodedFields));
    if (v.kind === 'status') {
      const { stage, errno } = v.decoded as { stage: number; errno: number };
      commands.push(`status ${stage} ${errno}`);
    }
  }
  const run = spawnSync(binary, [], {
    input: `${commands.join('\n')}\n`,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  expect(run.status).toBe(0);
  const lines = run.stdout.split('\n');
  expect(lines.length).toBe(commands.length + 1); // one answer a command, then the last newline
  commands.forEach((command, i) => answers.set(command, lines[i] as string));
});

afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

const cases = (kind: SpawnerVector['kind'], valid: boolean): [string, SpawnerVector][] =>
  vectors.filter((v) => v.kind === kind && (v.decoded !== undefined) === valid).map((v) => [v.name, v]);

describe('spec/spawner-vectors.json against svc-spawner.c', () => {
  it("holds the spec's constants: version, payload bounds, list limits, NSIG", () => {
    expect(answer('limits')).toEqual(SPAWNER_LIMITS);
  });

  it.each(cases('request', true))('decodes request %s to exactly its fields', (_name, v) => {
    expect(answer(`decode ${v.hex}`)).toEqual(v.decoded);
    expect(answer(`exec ${v.hex}`)).toEqual(v.exec_mode === true ? v.decoded : 'refused');
  });

  it.each(cases('request', false))('refuses request %s, on the socket and in exec mode', (_name, v) => {
    expect(answer(`decode ${v.hex}`)).toBe('refused');
    expect(answer(`exec ${v.hex}`)).toBe('refused');
  });

  it.each(cases('reply', true))('encodes reply %s to exactly its bytes', (_name, v) => {
    expect(answer(encodeCommand(v.decoded as DecodedFields))).toBe(v.hex);
  });

  it.each(cases('status', true))('writes exec status %s to exactly its bytes', (_name, v) => {
    const { stage, errno } = v.decoded as { stage: number; errno: number };
    expect(answer(`status ${stage} ${errno}`)).toBe(v.hex);
  });
});
