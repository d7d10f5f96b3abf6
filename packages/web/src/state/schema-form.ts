// A form generated from a JSON schema (the daemon's AppDefinition in /openapi.json, which is the
// schema the daemon validates a definition with), as pure data: the fields, their text values for a
// definition, the definition back from the values, and the daemon's validation errors placed beside
// their fields. The daemon reports invalid_app as "<field path>: <problem>" issues joined by "; "
// (packages/daemon/src/model/app-definition/issues.ts), with paths written `a.b`, `a[0]`,
// `a["key"]`; `fieldErrors` reads that format.

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  required?: string[];
  description?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
}

export type FieldKind =
  | 'text' // a string
  | 'number' // an integer or number
  | 'number-or-text' // a number when it reads as one, else the string
  | 'boolean'
  | 'choice' // one of `choices`
  | 'list' // an array of strings, comma- or newline-separated
  | 'map' // string → string, one KEY=VALUE per line
  | 'json'; // anything: JSON when it parses, else the text

export interface Field {
  /** The daemon's path for the field: `command`, `resource_limit.memory_mb`. */
  path: string;
  /** The keys from the definition's root. */
  keys: string[];
  label: string;
  kind: FieldKind;
  required: boolean;
  description: string | undefined;
  choices?: string[];
  /** For the map kind: the allowed values. */
  valueChoices?: string[];
  integer?: boolean;
}

function types(schema: JsonSchema): string[] {
  const own = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type];
  return [...own, ...(schema.anyOf ?? []).flatMap(types)];
}

function kindOf(schema: JsonSchema): Pick<Field, 'kind' | 'choices' | 'valueChoices' | 'integer'> {
  if (Array.isArray(schema.enum)) return { kind: 'choice', choices: schema.enum.map(String) };
  const t = new Set(types(schema));
  if (t.has('boolean') && t.size === 1) return { kind: 'boolean' };
  if ((t.has('integer') || t.has('number')) && t.has('string')) return { kind: 'number-or-text' };
  if (t.has('integer') || t.has('number')) return { kind: 'number', integer: !t.has('number') };
  if (t.has('string') && t.size === 1) return { kind: 'text' };
  if (t.has('array') && t.size === 1) return { kind: 'list' };
  if (t.has('object') && typeof schema.additionalProperties === 'object') {
    const values = schema.additionalProperties.enum;
    return { kind: 'map', ...(Array.isArray(values) ? { valueChoices: values.map(String) } : {}) };
  }
  return { kind: 'json' };
}

function labelOf(key: string): string {
  const words = key.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/**
 * The fields of an object schema, nested objects with their own properties (and no schema for
 * other keys) flattened into dotted paths; `server-set` properties (their description says so) are
 * left out.
 */
export function fieldsOf(schema: JsonSchema, keys: string[] = []): Field[] {
  const out: Field[] = [];
  const required = new Set(schema.required ?? []);
  for (const [key, property] of Object.entries(schema.properties ?? {})) {
    if (property.description?.startsWith('server-set') === true) continue;
    const path = [...keys, key];
    if (property.properties !== undefined && typeof property.additionalProperties !== 'object') {
      out.push(...fieldsOf(property, path));
      continue;
    }
    out.push({
      path: path.join('.'),
      keys: path,
      label: path.map(labelOf).join(' › '),
      required: keys.length === 0 && required.has(key),
      description: property.description,
      ...kindOf(property),
    });
  }
  return out;
}

function getAt(value: unknown, keys: readonly string[]): unknown {
  let current = value;
  for (const key of keys) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function setAt(target: Record<string, unknown>, keys: readonly string[], value: unknown): void {
  let current = target;
  for (const key of keys.slice(0, -1)) {
    const next = current[key];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) current[key] = {};
    current = current[key] as Record<string, unknown>;
  }
  current[keys[keys.length - 1]!] = value;
}

export type FormValues = Record<string, string | boolean>;

/** The text (or checkbox) value of each field for `definition`. */
export function valuesOf(fields: readonly Field[], definition: Record<string, unknown>): FormValues {
  const values: FormValues = {};
  for (const field of fields) {
    const value = getAt(definition, field.keys);
    if (field.kind === 'boolean') values[field.path] = value === true;
    else if (value === undefined || value === null) values[field.path] = '';
    else if (field.kind === 'list' && Array.isArray(value)) values[field.path] = value.map(String).join(', ');
    else if (field.kind === 'map' && typeof value === 'object')
      values[field.path] = Object.entries(value as Record<string, unknown>)
        .map(([k, v]) => `${k}=${String(v)}`)
        .join('\n');
    else if (field.kind === 'json') values[field.path] = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
    else values[field.path] = typeof value === 'string' ? value : JSON.stringify(value);
  }
  return values;
}

/**
 * The definition from the form: `base` (the definition being edited, so fields the form does not
 * show are kept) overlaid with every field; an empty field removes its value. Values the form can
 * tell are wrong (a number that is not one, a map line without `=`) are reported by path.
 */
export function definitionFrom(
  fields: readonly Field[],
  values: FormValues,
  base: Record<string, unknown> = {},
): { definition: Record<string, unknown>; errors: Record<string, string> } {
  const definition = structuredClone(base);
  const errors: Record<string, string> = {};
  const remove = (keys: readonly string[]) => {
    const parent = getAt(definition, keys.slice(0, -1));
    if (typeof parent === 'object' && parent !== null) delete (parent as Record<string, unknown>)[keys[keys.length - 1]!];
  };
  for (const field of fields) {
    const raw = values[field.path];
    if (field.kind === 'boolean') {
      if (raw === true) setAt(definition, field.keys, true);
      else if (getAt(base, field.keys) !== undefined) setAt(definition, field.keys, false);
      continue;
    }
    const text = typeof raw === 'string' ? raw.trim() : '';
    if (text === '') {
      remove(field.keys);
      continue;
    }
    switch (field.kind) {
      case 'number': {
        const n = Number(text);
        if (!Number.isFinite(n) || (field.integer === true && !Number.isInteger(n))) errors[field.path] = 'must be a number';
        else setAt(definition, field.keys, n);
        break;
      }
      case 'number-or-text':
        setAt(definition, field.keys, /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text);
        break;
      case 'list':
        setAt(definition, field.keys, text.split(/[\s,]+/).filter((s) => s !== ''));
        break;
      case 'map': {
        const entries: [string, string][] = [];
        const bad = text.split('\n').find((line) => line.trim() !== '' && line.indexOf('=') <= 0);
        if (bad !== undefined) {
          errors[field.path] = `each line is KEY=VALUE ("${bad.slice(0, 40)}" is not)`;
          break;
        }
        for (const line of text.split('\n')) {
          const at = line.indexOf('=');
          if (at > 0) entries.push([line.slice(0, at).trim(), line.slice(at + 1)]);
        }
        // fromEntries defines own properties: a key such as `__proto__` stays an ordinary key.
        setAt(definition, field.keys, Object.fromEntries(entries));
        break;
      }
      case 'json':
        try {
          setAt(definition, field.keys, JSON.parse(text) as unknown);
        } catch {
          setAt(definition, field.keys, text);
        }
        break;
      default:
        setAt(definition, field.keys, typeof raw === 'string' ? raw : text);
    }
  }
  return { definition, errors };
}

/** The top-level and dotted keys of a daemon path: `env["A B"]` → env, `a.b[0]` → a.b. */
function fieldPathOf(path: string): string {
  return path.replace(/\[.*$/, '');
}

/**
 * The daemon's invalid_app message split into issues by field: `byField[path]` for issues on a
 * field of the form (or inside one, like an env entry), `general` for the rest.
 */
export function fieldErrors(
  message: string,
  fields: readonly Field[],
): { byField: Record<string, string>; general: string[] } {
  const byField: Record<string, string> = {};
  const general: string[] = [];
  const known = new Set(fields.map((f) => f.path));
  for (const issue of message.split('; ')) {
    const m = /^([A-Za-z_][\w.]*(?:\[[^\]]*\])*(?:\.[A-Za-z_]\w*)*): (.*)$/s.exec(issue);
    if (m === null) {
      general.push(issue);
      continue;
    }
    let path = fieldPathOf(m[1]!);
    while (!known.has(path) && path.includes('.')) path = path.slice(0, path.lastIndexOf('.'));
    if (!known.has(path)) {
      general.push(issue);
      continue;
    }
    const text = m[1] === path ? m[2]! : `${m[1]}: ${m[2]}`;
    byField[path] = byField[path] === undefined ? text : `${byField[path]}; ${text}`;
  }
  return { byField, general };
}
