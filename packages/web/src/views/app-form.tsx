// Register or edit an application with a form generated from the daemon's own AppDefinition schema
// (GET /openapi.json); the daemon's validation errors appear beside their fields.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { ApiError } from '@svc/client/browser';
import { api, errorText } from '../api.ts';
import { SchemaField, fieldId } from '../components/schema-field.tsx';
import { href, navigate } from '../router.ts';
import { definitionFrom, fieldErrors, fieldsOf, valuesOf, type FormValues, type JsonSchema } from '../state/schema-form.ts';
import { editableDefinition } from '../state/app-definition.ts';
import type { ViewProps } from '../views.ts';

let schemaCache: Promise<JsonSchema> | undefined;

function appSchema(): Promise<JsonSchema> {
  schemaCache ??= api.getOpenApi().then((doc) => {
    const schema = (doc as { components?: { schemas?: Record<string, JsonSchema> } }).components?.schemas?.['AppDefinition'];
    if (schema === undefined) throw new Error('the daemon publishes no AppDefinition schema');
    return schema;
  });
  schemaCache.catch(() => (schemaCache = undefined));
  return schemaCache;
}

/**
 * The form's fields: the schema's, the name required (a body may leave it out, since the path names
 * the application; the form always names it).
 */
function formFields(schema: JsonSchema) {
  return fieldsOf(schema).map((field) => (field.path === 'name' ? { ...field, required: true } : field));
}

/** Fields shown first; the rest follow under "More settings". */
const MAIN = new Set(['name', 'command', 'description', 'shell', 'working_dir', 'enabled', 'env', 'behavior.exit', 'health_check_cmd']);

export default function AppForm({ params }: ViewProps) {
  const editing = params['name'];
  const [schema, setSchema] = useState<JsonSchema | undefined>(undefined);
  const [base, setBase] = useState<Record<string, unknown> | undefined>(editing === undefined ? {} : undefined);
  const [values, setValues] = useState<FormValues>({});
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [general, setGeneral] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const [loadError, setLoadError] = useState<string | undefined>(undefined);
  const fields = useMemo(() => (schema === undefined ? [] : formFields(schema)), [schema]);

  useEffect(() => {
    void (async () => {
      try {
        const loaded = await appSchema();
        const accepted = new Set(formFields(loaded).map((f) => f.keys[0]!));
        const definition =
          editing === undefined ? { enabled: true } : editableDefinition(await api.getApplication(editing), accepted);
        setSchema(loaded);
        setBase(editing === undefined ? {} : definition);
        setValues(valuesOf(formFields(loaded), definition));
      } catch (cause) {
        setLoadError(errorText(cause));
      }
    })();
  }, [editing]);

  if (loadError !== undefined)
    return (
      <p class="note error" role="alert">
        {loadError}
      </p>
    );
  if (schema === undefined || base === undefined) return <p aria-busy="true">Loading…</p>;

  const submit = async (event: Event) => {
    event.preventDefault();
    const { definition, errors: local } = definitionFrom(fields, values, base);
    const name = editing ?? (typeof definition['name'] === 'string' ? definition['name'] : '');
    if (editing !== undefined) definition['name'] = editing;
    setGeneral([]);
    setErrors(local);
    if (Object.keys(local).length > 0) return focusFirstError(local);
    if (name === '') return setErrors({ name: 'required' });
    setBusy(true);
    try {
      await api.registerApplication(name, definition);
      navigate(href('/app/:name', { name }));
    } catch (cause) {
      if (cause instanceof ApiError && cause.status === 400) {
        const placed = fieldErrors(cause.message, fields);
        setErrors(placed.byField);
        setGeneral(placed.general);
        focusFirstError(placed.byField);
      } else setGeneral([errorText(cause)]);
    } finally {
      setBusy(false);
    }
  };
  const onChange = (path: string, value: string | boolean) => setValues((v) => ({ ...v, [path]: value }));
  const render = (list: typeof fields) =>
    list.map((field) => (
      <SchemaField
        key={field.path}
        field={field}
        values={values}
        error={errors[field.path]}
        disabled={busy || (editing !== undefined && field.path === 'name')}
        onChange={onChange}
      />
    ));
  return (
    <section>
      <h1>{editing === undefined ? 'Register an application' : `Edit ${editing}`}</h1>
      <form class="app-form" onSubmit={(e) => void submit(e)} noValidate>
        {general.length > 0 && (
          <div class="note error" role="alert">
            {general.map((g) => (
              <p key={g}>{g}</p>
            ))}
          </div>
        )}
        {render(fields.filter((f) => MAIN.has(f.path)))}
        <details>
          <summary>More settings</summary>
          {render(fields.filter((f) => !MAIN.has(f.path)))}
        </details>
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            {editing === undefined ? 'Register' : 'Save'}
          </button>
          <a class="button" href={editing === undefined ? '#/apps' : href('/app/:name', { name: editing })}>
            Cancel
          </a>
        </div>
      </form>
    </section>
  );
}

function focusFirstError(errors: Record<string, string>): void {
  const first = Object.keys(errors)[0];
  if (first === undefined) return;
  requestAnimationFrame(() => {
    const element = document.getElementById(fieldId(first));
    const details = element?.closest('details');
    if (details !== null && details !== undefined) details.open = true;
    element?.focus();
  });
}
