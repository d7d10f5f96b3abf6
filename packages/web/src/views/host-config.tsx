// The host configuration (administration): every section as read from GET /svc/config; principals
// allowed to change it edit the fields in place and save only what changed (POST /svc/config
// merges a partial sectioned config). The daemon's validation message is shown beside the field it
// names; keys that apply only at the next start are listed after saving.
import { useMemo, useState } from 'preact/hooks';
import { can } from '../access.ts';
import { api, errorText } from '../api.ts';
import { configChanges, configFields, placeError, type ConfigField } from '../admin/config-edit.ts';
import { useResource } from '../admin/use-resource.ts';
import type { JsonSchema } from '../state/schema-form.ts';
import type { ViewProps } from '../views.ts';

/** What the daemon's Config schema says of one setting: its choices and description. */
interface SchemaHint {
  choices?: string[];
  description?: string;
}

/** Every setting of the Config schema (GET /openapi.json) by dotted path; empty when unavailable. */
async function schemaHints(): Promise<ReadonlyMap<string, SchemaHint>> {
  const hints = new Map<string, SchemaHint>();
  const walk = (schema: JsonSchema, keys: string[]): void => {
    for (const [key, property] of Object.entries(schema.properties ?? {})) {
      const path = [...keys, key];
      if (property.properties !== undefined) walk(property, path);
      hints.set(path.join('.'), {
        ...(Array.isArray(property.enum) ? { choices: property.enum.map(String) } : {}),
        ...(property.description === undefined ? {} : { description: property.description }),
      });
    }
  };
  try {
    const doc = (await api.getOpenApi()) as { components?: { schemas?: Record<string, JsonSchema> } };
    const schema = doc.components?.schemas?.['Config'];
    if (schema !== undefined) walk(schema, []);
  } catch {
    // The form works without it: kinds come from the values, the daemon validates.
  }
  return hints;
}

function fieldId(path: string): string {
  return `config-${path.replace(/[^A-Za-z0-9]/g, '-')}`;
}

export default function HostConfig(_props: ViewProps) {
  const config = useResource(() => api.getConfig() as Promise<Record<string, unknown>>);
  const schema = useResource(schemaHints);
  const fields = useMemo(() => configFields(config.data ?? {}), [config.data]);
  const [edited, setEdited] = useState<Record<string, string>>({});
  const [errors, setErrors] = useState<{ path: string | undefined; text: string } | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const editable = can('updateConfig');
  const sections = [...new Set(fields.map((f) => f.section))];
  const paths = useMemo(() => new Set(fields.map((f) => f.path)), [fields]);
  const changes = configChanges(fields, edited);

  const save = async () => {
    if (changes === undefined) return;
    setBusy(true);
    setNotice(undefined);
    try {
      const answer = (await api.updateConfig(changes)) as {
        restart_required?: string[];
      };
      setErrors(undefined);
      setEdited({});
      const restart = answer.restart_required ?? [];
      setNotice(restart.length === 0 ? 'Saved.' : `Saved; applies at the next start: ${restart.join(', ')}.`);
      await config.reload();
    } catch (cause) {
      setErrors(placeError(errorText(cause), paths));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="admin">
      <div class="toolbar">
        <h1>Configuration</h1>
      </div>
      {config.error !== undefined && (
        <p class="note error" role="alert">
          {config.error}
        </p>
      )}
      <form
        class="config-form"
        aria-label="Configuration"
        onSubmit={(event) => {
          event.preventDefault();
          void save();
        }}
        aria-busy={config.loading}
      >
        {sections.map((section) => (
          <fieldset key={section} class="panel">
            <legend>{section}</legend>
            {fields
              .filter((f) => f.section === section)
              .map((field) => (
                <ConfigInput
                  key={field.path}
                  field={field}
                  schema={schema.data?.get(field.path)}
                  text={edited[field.path] ?? field.text}
                  editable={editable}
                  error={errors?.path === field.path ? errors.text : undefined}
                  onChange={(text) => setEdited({ ...edited, [field.path]: text })}
                />
              ))}
          </fieldset>
        ))}
        {errors !== undefined && errors.path === undefined && (
          <p class="field-error" role="alert">
            {errors.text}
          </p>
        )}
        {notice !== undefined && (
          <p class="note" role="status">
            {notice}
          </p>
        )}
        {editable && (
          <div class="actions sticky">
            <button type="submit" class="button primary" disabled={busy || changes === undefined}>
              Save changes
            </button>
            <button
              type="button"
              disabled={busy || changes === undefined}
              onClick={() => (setEdited({}), setErrors(undefined))}
            >
              Discard
            </button>
          </div>
        )}
      </form>
    </section>
  );
}

function ConfigInput(props: {
  field: ConfigField;
  schema: SchemaHint | undefined;
  text: string;
  editable: boolean;
  error: string | undefined;
  onChange: (text: string) => void;
}) {
  const { field, text, editable, error } = props;
  const id = fieldId(field.path);
  const description = props.schema?.description;
  const described =
    [description === undefined ? '' : `${id}-help`, error === undefined ? '' : `${id}-error`]
      .filter(Boolean)
      .join(' ') || undefined;
  const choices = field.kind === 'text' ? props.schema?.choices : undefined;
  const common = {
    id,
    name: field.path,
    disabled: !editable,
    'aria-invalid': error !== undefined,
    'aria-describedby': described,
  };
  let input;
  switch (field.kind) {
    case 'boolean':
      input = (
        <input
          type="checkbox"
          {...common}
          checked={text === 'true'}
          onChange={(e) => props.onChange(e.currentTarget.checked ? 'true' : 'false')}
        />
      );
      break;
    case 'lines':
    case 'json':
      input = (
        <textarea {...common} rows={2} value={text} onInput={(e) => props.onChange(e.currentTarget.value)} />
      );
      break;
    default:
      input =
        choices !== undefined ? (
          <select {...common} value={text} onChange={(e) => props.onChange(e.currentTarget.value)}>
            {(choices.includes(text) ? choices : [text, ...choices]).map((choice) => (
              <option key={choice} value={choice}>
                {choice}
              </option>
            ))}
          </select>
        ) : (
          <input
            type="text"
            inputMode={field.kind === 'number' ? 'numeric' : undefined}
            placeholder={field.kind === 'nullable' ? 'not set' : undefined}
            {...common}
            value={text}
            onInput={(e) => props.onChange(e.currentTarget.value)}
          />
        );
  }
  return (
    <div class={`field config-field kind-${field.kind}`} data-path={field.path}>
      <label for={id}>{field.label}</label>
      {input}
      {(description !== undefined || field.kind === 'lines') && (
        <span class="help" id={`${id}-help`}>
          {[description, field.kind === 'lines' ? 'one per line' : undefined].filter(Boolean).join(' · ')}
        </span>
      )}
      {error !== undefined && (
        <span class="field-error" id={described} role="alert">
          {error}
        </span>
      )}
    </div>
  );
}
