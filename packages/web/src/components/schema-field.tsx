// One generated form field (state/schema-form.ts), its help text and the server's error beside it.
import type { Field, FormValues } from '../state/schema-form.ts';

export function fieldId(path: string): string {
  return `field-${path.replace(/[^A-Za-z0-9_-]/g, '-')}`;
}

export function SchemaField({
  field,
  values,
  error,
  disabled,
  onChange,
}: {
  field: Field;
  values: FormValues;
  error: string | undefined;
  disabled?: boolean;
  onChange: (path: string, value: string | boolean) => void;
}) {
  const id = fieldId(field.path);
  const value = values[field.path];
  const describedBy = [field.description === undefined ? '' : `${id}-help`, error === undefined ? '' : `${id}-error`]
    .filter(Boolean)
    .join(' ');
  const common = {
    id,
    name: field.path,
    disabled: disabled === true,
    'aria-invalid': error !== undefined,
    ...(describedBy === '' ? {} : { 'aria-describedby': describedBy }),
  };
  const text = typeof value === 'string' ? value : '';
  const onText = (e: Event) => onChange(field.path, (e.target as HTMLInputElement).value);
  let input;
  switch (field.kind) {
    case 'boolean':
      input = <input {...common} type="checkbox" checked={value === true} onChange={(e) => onChange(field.path, (e.target as HTMLInputElement).checked)} />;
      break;
    case 'choice':
      input = (
        <select {...common} value={text} onChange={onText}>
          <option value="">(default)</option>
          {field.choices?.map((c) => (
            <option key={c} value={c}>
              {c}
            </option>
          ))}
        </select>
      );
      break;
    case 'map':
    case 'json':
      input = (
        <textarea
          {...common}
          rows={3}
          value={text}
          onInput={onText}
          placeholder={field.kind === 'map' ? `KEY=VALUE, one per line${field.valueChoices ? ` (${field.valueChoices.join(', ')})` : ''}` : 'JSON or text'}
        />
      );
      break;
    case 'number':
      input = <input {...common} type="number" step={field.integer === true ? 1 : 'any'} value={text} onInput={onText} />;
      break;
    default:
      input = (
        <input
          {...common}
          type="text"
          value={text}
          onInput={onText}
          required={field.required}
          placeholder={field.kind === 'list' ? 'comma-separated' : undefined}
        />
      );
  }
  return (
    <div class="field" data-field={field.path}>
      <label for={id}>
        {field.label}
        {field.required && <span aria-hidden="true"> *</span>}
      </label>
      {input}
      {field.description !== undefined && (
        <span class="help" id={`${id}-help`}>
          {field.description}
        </span>
      )}
      {error !== undefined && (
        <span class="field-error" id={`${id}-error`} role="alert">
          {error}
        </span>
      )}
    </div>
  );
}
