// Labels of this host (administration): key = value pairs used by cluster placement conditions
// and shown in node reports. Add and delete only for principals allowed to.
import { useState } from 'preact/hooks';
import { can } from '../access.ts';
import { api } from '../api.ts';
import { AdminTable, DeleteButton } from '../components/admin.tsx';
import { attempt, useResource } from '../admin/use-resource.ts';
import type { ViewProps } from '../views.ts';

export default function Labels(_props: ViewProps) {
  const labels = useResource(() => api.listLabels());
  const [error, setError] = useState<string | undefined>(undefined);
  const entries = Object.entries(labels.data ?? {}).sort(([a], [b]) => a.localeCompare(b));
  const mayDelete = can('deleteLabel');

  return (
    <AdminTable
      title="Labels"
      error={labels.error ?? error}
      loading={labels.loading}
      columns={mayDelete ? ['Key', 'Value', 'Actions'] : ['Key', 'Value']}
      after={can('setLabel') && <LabelForm onError={setError} onAdded={labels.reload} />}
    >
      {entries.length === 0 && !labels.loading && (
        <tr>
          <td colSpan={3} class="muted">
            No labels.
          </td>
        </tr>
      )}
      {entries.map(([k, v]) => (
        <tr key={k} data-label={k}>
          <td class="mono">{k}</td>
          <td class="mono">{v}</td>
          {mayDelete && (
            <td>
              <div class="row-actions">
                <DeleteButton
                  question={`Delete label ${k}?`}
                  remove={() => api.deleteLabel(k)}
                  onError={setError}
                  reload={labels.reload}
                />
              </div>
            </td>
          )}
        </tr>
      ))}
    </AdminTable>
  );
}

/** The form that adds a label; a refusal goes to the page's alert (`onError`). */
function LabelForm(props: { onError: (message: string | undefined) => void; onAdded: () => Promise<void> }) {
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="panel admin-form inline"
      aria-label="Add a label"
      onSubmit={(event) => {
        event.preventDefault();
        void (async () => {
          setBusy(true);
          const failed = await attempt(() => api.setLabel(key.trim(), value));
          setBusy(false);
          props.onError(failed);
          if (failed === undefined) {
            setKey('');
            setValue('');
            await props.onAdded();
          }
        })();
      }}
    >
      <h2>Add a label</h2>
      <label class="field">
        Key
        <input
          name="key"
          value={key}
          required
          maxLength={128}
          onInput={(e) => setKey(e.currentTarget.value)}
        />
      </label>
      <label class="field">
        Value
        <input name="value" value={value} maxLength={1024} onInput={(e) => setValue(e.currentTarget.value)} />
      </label>
      <div class="actions">
        <button type="submit" class="button primary" disabled={busy || key.trim() === ''}>
          Add label
        </button>
      </div>
    </form>
  );
}
