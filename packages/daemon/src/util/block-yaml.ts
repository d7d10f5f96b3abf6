// The YAML writer of stored documents (application definitions). A small block-style writer: the
// yaml library's Document model costs ~0.3 ms per definition save, which sits on the start path
// before the spawn, and its output is YAML 1.2 only (`y: yes`, `ON: off`, `d: 2001-12-14` are
// strings in 1.2 but booleans and dates to YAML 1.1 readers such as PyYAML).
//
// Contract: every output reads back to the same JSON value with a YAML 1.2 core-schema reader AND
// with a YAML 1.1 reader (PyYAML's safe_load):
// - a string is written plain only when it matches a conservative pattern that no reader resolves
//   to another type (starts with a letter, `_` or `/`; not a 1.1 boolean or null word in any case;
//   no `: `); every other string is a JSON string, which is a valid YAML double-quoted scalar, with
//   the characters YAML does not allow raw (C1 controls, BOM, U+FFFE/U+FFFF) escaped as \uXXXX;
// - keys likewise, and keys too long for an implicit key are written as explicit `? ` keys;
// - numbers in exponent form get a fraction (`1.0e+21`): YAML 1.1 floats need a dot; NaN, ±Infinity
//   and -0 are `.nan`, `.inf`, `-.inf`, `-0.0`;
// - nested mappings and sequences in block style, empty ones as `{}` / `[]`.
// `writeYaml` falls back to the library only for what the writer declines (non-finite numbers,
// non-plain objects, nesting deeper than MAX_DEPTH), with every string double-quoted and numbers
// written as here.
import { Document, isScalar as isYamlScalar, visit } from 'yaml';

type Scalar = string | number | boolean | null;

/** Plain (unquoted) strings: a conservative subset that no YAML reader resolves to a non-string. */
const PLAIN = /^[A-Za-z_/][A-Za-z0-9_./@+=:-]*(?: [A-Za-z0-9_./@+=:-]+)*$/;
/** Words YAML 1.1 or 1.2 readers resolve to booleans or null (compared lower-cased). */
const RESERVED = new Set(['true', 'false', 'null', 'yes', 'no', 'on', 'off', 'y', 'n']);
const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Characters JSON.stringify leaves raw that YAML does not allow raw (or this writer will not risk). */
const UNSAFE = /[\u007f-\u009f\u2028\u2029\ufeff\ufffe\uffff]/g;
/** Longest key written as an implicit key (YAML allows 1024 characters; escapes lengthen it). */
const MAX_IMPLICIT_KEY = 256;
/** Deepest nesting written (deeper documents go to the library). */
export const MAX_DEPTH = 32;

function isScalar(value: unknown): value is Scalar {
  return (
    value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
  );
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Thrown inside the writer when a value is outside what it writes; never escapes writeBlockYaml. */
class Unsupported extends Error {}

/** A JSON string with what YAML forbids raw escaped: a YAML double-quoted scalar in 1.1 and 1.2. */
function quoted(value: string): string {
  return JSON.stringify(value).replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** True when the string can be written plain (unquoted) for YAML 1.1 and 1.2 readers alike. */
export function isPlainSafe(value: string): boolean {
  return (
    PLAIN.test(value) && !value.endsWith(':') && !value.includes(': ') && !RESERVED.has(value.toLowerCase())
  );
}

/** A number as both YAML 1.1 and 1.2 read it back (1.1 floats need a `.` before an exponent). */
function number(value: number): string {
  if (Number.isNaN(value)) return '.nan';
  if (!Number.isFinite(value)) return value > 0 ? '.inf' : '-.inf';
  if (Object.is(value, -0)) return '-0.0';
  const text = String(value);
  return text.includes('e') && !text.includes('.') ? text.replace('e', '.0e') : text;
}

/** The library's numbers written by `number` (the first tag that identifies a value writes it). */
const SAFE_NUMBER = {
  identify: (value: unknown) => typeof value === 'number',
  default: true,
  tag: 'tag:yaml.org,2002:float',
  test: /(?!)/, // never resolves text: this tag only writes
  resolve: (text: string) => Number(text),
  stringify: ({ value }: { value: unknown }) => number(value as number),
};

function scalar(value: Scalar): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return number(value);
  return isPlainSafe(value) ? value : quoted(value);
}

/** `name:` (implicit key) or `? name\n:` (explicit key, for long names). */
function keyHead(name: string, indent: string): string {
  if (PLAIN_KEY.test(name) && name.length <= MAX_IMPLICIT_KEY && !RESERVED.has(name.toLowerCase()))
    return `${indent}${name}:`;
  const text = quoted(name);
  if (text.length <= MAX_IMPLICIT_KEY) return `${indent}${text}:`;
  return `${indent}? ${text}\n${indent}:`;
}

/** The lines of `value` as the content of a block node at `indent` (after `head`). */
function node(head: string, value: unknown, indent: string, depth: number): string {
  if (isScalar(value)) return `${head} ${scalar(value)}\n`;
  if (depth > MAX_DEPTH) throw new Unsupported();
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    if (value.length === 0) return `${head} []\n`;
    let out = `${head}\n`;
    for (const item of value) out += node(`${inner}-`, item, inner, depth + 1);
    return out;
  }
  if (isPlainObject(value)) {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    if (entries.length === 0) return `${head} {}\n`;
    let out = `${head}\n`;
    for (const [k, v] of entries) out += node(keyHead(k, inner), v, inner, depth + 1);
    return out;
  }
  throw new Unsupported();
}

/**
 * Block YAML of a mapping of JSON values (nested up to MAX_DEPTH); undefined values in mappings are
 * left out (as the yaml library does). Returns undefined for anything else (non-plain objects,
 * deeper nesting).
 */
export function writeBlockYaml(doc: Record<string, unknown>): string | undefined {
  let out = '';
  try {
    for (const [name, value] of Object.entries(doc)) {
      if (value !== undefined) out += node(keyHead(name, ''), value, '', 1);
    }
  } catch (error) {
    if (error instanceof Unsupported) return undefined;
    throw error;
  }
  return out;
}

/**
 * YAML of the mapping, safe for YAML 1.1 and 1.2 readers: the block writer, else the yaml library
 * with every string (keys included) double-quoted, so no 1.1 reader resolves one to another type.
 */
export function writeYaml(doc: Record<string, unknown>): string {
  if (Object.values(doc).every((v) => v === undefined)) return '{}\n';
  const written = writeBlockYaml(doc);
  if (written !== undefined) return written;
  const document = new Document(doc, { customTags: (tags) => [SAFE_NUMBER, ...tags] });
  visit(document, {
    Scalar(_key, item) {
      if (typeof item.value === 'string') item.type = 'QUOTE_DOUBLE';
    },
    Pair(_key, pair) {
      if (isYamlScalar(pair.key) && typeof pair.key.value === 'string') pair.key.type = 'QUOTE_DOUBLE';
    },
  });
  return document.toString({ lineWidth: 0 });
}
