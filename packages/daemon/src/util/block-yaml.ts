// A small block-style YAML writer for flat documents (application definitions): the yaml library's
// Document model costs ~0.3 ms per definition save, which sits on the start path before the spawn.
// It writes only what it can write unambiguously; for anything else it returns undefined and the
// caller uses the library. Every output parses back (YAML 1.2 core schema, and YAML 1.1 readers)
// to the same document: strings that a reader could take for another type, or that need escapes,
// are written as JSON strings, which are valid YAML double-quoted scalars.

type Scalar = string | number | boolean | null;

/** Plain (unquoted) strings: a conservative subset that no YAML reader resolves to a non-string. */
const PLAIN = /^[A-Za-z_/][A-Za-z0-9_./@+=:-]*(?: [A-Za-z0-9_./@+=:-]+)*$/;
/** Words YAML 1.1 or 1.2 readers resolve to booleans or null (compared lower-cased). */
const RESERVED = new Set(['true', 'false', 'null', 'yes', 'no', 'on', 'off', 'y', 'n']);
const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Characters JSON.stringify leaves raw that YAML does not allow raw (or this writer will not risk). */
const UNSAFE = /[\u007f-\u009f\ud800-\udfff\ufeff\ufffe\uffff]/;

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

function scalar(value: Scalar): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || Object.is(value, -0)) throw new Unsupported();
    return String(value);
  }
  if (UNSAFE.test(value)) throw new Unsupported();
  if (
    PLAIN.test(value) &&
    !value.endsWith(':') &&
    !value.includes(': ') &&
    !RESERVED.has(value.toLowerCase())
  )
    return value;
  return JSON.stringify(value);
}

function key(name: string): string {
  if (name.length > 512) throw new Unsupported(); // YAML limits implicit keys to 1024 characters
  if (PLAIN_KEY.test(name) && !RESERVED.has(name.toLowerCase())) return name;
  if (UNSAFE.test(name)) throw new Unsupported();
  return JSON.stringify(name);
}

/** `value` under `name` at `indent`; maps nest, lists hold scalars only. */
function entry(name: string, value: unknown, indent: string, depth: number): string {
  const head = `${indent}${key(name)}:`;
  if (isScalar(value)) return `${head} ${scalar(value)}\n`;
  if (Array.isArray(value)) {
    if (value.length === 0) return `${head} []\n`;
    let out = `${head}\n`;
    for (const item of value) {
      if (!isScalar(item)) throw new Unsupported();
      out += `${indent}  - ${scalar(item)}\n`;
    }
    return out;
  }
  if (isPlainObject(value) && depth < 3) {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    if (entries.length === 0) return `${head} {}\n`;
    let out = `${head}\n`;
    for (const [k, v] of entries) out += entry(k, v, `${indent}  `, depth + 1);
    return out;
  }
  throw new Unsupported();
}

/**
 * Block YAML of a mapping whose values are scalars, lists of scalars or (up to two levels of)
 * mappings of those; undefined values are left out (as the yaml library does). Returns undefined
 * for anything else (lists of mappings, deeper nesting, non-finite numbers, unusual characters).
 */
export function writeBlockYaml(doc: Record<string, unknown>): string | undefined {
  let out = '';
  try {
    for (const [name, value] of Object.entries(doc)) {
      if (value !== undefined) out += entry(name, value, '', 1);
    }
  } catch (error) {
    if (error instanceof Unsupported) return undefined;
    throw error;
  }
  return out;
}
