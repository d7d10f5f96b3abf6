// The host configuration as an editable form, decided purely: the fields of a sectioned config
// (`{BaseConfig: {LogLevel: 'INFO', …}, REST: {Limits: {…}}}`) with a kind taken from each current
// value, the partial update of what changed (POST /svc/config merges a partial sectioned config),
// and where the daemon's validation message belongs (`BaseConfig.LogLevel: must be one of …`).
// No schema is bundled: the daemon validates and its message names the field.

export type FieldKind = 'text' | 'number' | 'boolean' | 'lines' | 'nullable' | 'json';

export interface ConfigField {
  /** Dotted path, e.g. `REST.Limits.MaxBodyBytes`. */
  path: string;
  section: string;
  label: string;
  kind: FieldKind;
  /** The current value as the form shows it (a checkbox's is 'true' / 'false'). */
  text: string;
}

/** Sections the config view leaves to other views (labels have their own). */
export const OTHER_VIEWS: ReadonlySet<string> = new Set(['Labels']);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function kindOf(value: unknown): FieldKind {
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'string') return 'text';
  if (value === null) return 'nullable';
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return 'lines';
  return 'json';
}

function textOf(value: unknown, kind: FieldKind): string {
  switch (kind) {
    case 'boolean':
      return value === true ? 'true' : 'false';
    case 'number':
      return String(value);
    case 'text':
      return value as string;
    case 'nullable':
      return '';
    case 'lines':
      return (value as string[]).join('\n');
    case 'json':
      return JSON.stringify(value);
  }
}

/** Every leaf of `config` as a field, sections in their order (nested objects flattened). */
export function configFields(config: Record<string, unknown>): ConfigField[] {
  const fields: ConfigField[] = [];
  const walk = (value: unknown, path: string[]): void => {
    if (isPlainObject(value) && path.length > 0 && Object.keys(value).length > 0 && path.length < 4) {
      for (const [key, inner] of Object.entries(value)) walk(inner, [...path, key]);
      return;
    }
    if (path.length < 2) return;
    const kind = kindOf(value);
    fields.push({
      path: path.join('.'),
      section: path[0]!,
      label: path.slice(1).join(' › '),
      kind,
      text: textOf(value, kind),
    });
  };
  for (const [section, value] of Object.entries(config)) {
    if (OTHER_VIEWS.has(section) || !isPlainObject(value)) continue;
    walk(value, [section]);
  }
  return fields;
}

/**
 * The value to send for an edited field. A number that does not parse is sent as typed, so the
 * daemon's validation names the field; an empty nullable field is null; JSON that does not parse
 * is sent as text for the same reason.
 */
export function valueOf(kind: FieldKind, text: string): unknown {
  switch (kind) {
    case 'boolean':
      return text === 'true';
    case 'number': {
      const trimmed = text.trim();
      const number = Number(trimmed);
      return trimmed !== '' && Number.isFinite(number) ? number : text;
    }
    case 'text':
      return text;
    case 'nullable': {
      const trimmed = text.trim();
      if (trimmed === '') return null;
      const number = Number(trimmed);
      return /^\d+$/.test(trimmed) && Number.isSafeInteger(number) ? number : trimmed;
    }
    case 'lines':
      return text
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line !== '');
    case 'json':
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return text;
      }
  }
}

/** The partial sectioned update holding only the fields whose text changed; undefined if none. */
export function configChanges(
  fields: readonly ConfigField[],
  edited: Readonly<Record<string, string>>,
): Record<string, unknown> | undefined {
  const update: Record<string, unknown> = {};
  let changed = false;
  for (const field of fields) {
    const text = edited[field.path];
    if (text === undefined || text === field.text) continue;
    changed = true;
    const keys = field.path.split('.');
    let target = update;
    for (const key of keys.slice(0, -1)) {
      const next = target[key];
      target = isPlainObject(next) ? next : (target[key] = {});
    }
    target[keys[keys.length - 1]!] = valueOf(field.kind, text);
  }
  return changed ? update : undefined;
}

/**
 * Where the daemon's message belongs: `BaseConfig.LogLevel: must be …` names a field of `paths`
 * (or one of its ancestors, the nearest one that is a field), otherwise the form as a whole.
 */
export function placeError(
  message: string,
  paths: ReadonlySet<string>,
): { path: string | undefined; text: string } {
  const match = /^([A-Za-z0-9_.[\]]+): (.*)$/s.exec(message);
  if (match === null) return { path: undefined, text: message };
  let path = match[1]!.replace(/\[\d+\]/g, '');
  while (path !== '') {
    if (paths.has(path)) return { path, text: match[2]! };
    const dot = path.lastIndexOf('.');
    path = dot < 0 ? '' : path.slice(0, dot);
  }
  return { path: undefined, text: message };
}
