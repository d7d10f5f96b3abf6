// The shapes the administration views share: a page listing records in a table (its title, the
// load or change error, the column heads); a titled form whose submit runs one change against the
// daemon, shows the daemon's refusal beside the buttons, and reports success; and a set of
// checkboxes choosing some of a list (a principal's roles, a role's permissions); a record's
// confirmed Delete.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { attempt } from '../admin/use-resource.ts';
import { ConfirmButton } from './confirm-button.tsx';

/** An administration page: title, optional note, the error, the records' table, then `after`. */
export function AdminTable(props: {
  title: string;
  note?: ComponentChildren;
  /** The load error or the last change's refusal, shown above the table. */
  error: string | undefined;
  loading: boolean;
  columns: readonly string[];
  /** The table's rows. */
  children: ComponentChildren;
  /** Below the table: the page's form, when the principal may use it. */
  after?: ComponentChildren;
}) {
  return (
    <section class="admin">
      <div class="toolbar">
        <h1>{props.title}</h1>
      </div>
      {props.note !== undefined && <p class="note">{props.note}</p>}
      {props.error !== undefined && (
        <p class="note error" role="alert">
          {props.error}
        </p>
      )}
      <div class="table-wrap">
        <table class="grid" aria-label={props.title} aria-busy={props.loading}>
          <thead>
            <tr>
              {props.columns.map((column) => (
                <th key={column} scope="col">
                  {column}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>{props.children}</tbody>
        </table>
      </div>
      {props.after}
    </section>
  );
}

export function AdminForm(props: {
  title: string;
  /** The change to make; its error message is shown in the form. */
  save: () => Promise<unknown>;
  /** After a successful save, and on Cancel. */
  onDone: () => Promise<void>;
  /** Editing an existing record: the submit says "Save" and a Cancel button is shown. */
  editing: boolean;
  submitLabel: string;
  /** The submit is disabled while this holds (e.g. a required field is empty). */
  incomplete: boolean;
  children: ComponentChildren;
}) {
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="panel admin-form"
      aria-label={props.title}
      onSubmit={(event) => {
        event.preventDefault();
        void (async () => {
          setBusy(true);
          const failed = await attempt(props.save);
          setBusy(false);
          setError(failed);
          if (failed === undefined) await props.onDone();
        })();
      }}
    >
      <h2>{props.title}</h2>
      {props.children}
      {error !== undefined && (
        <p class="field-error" role="alert">
          {error}
        </p>
      )}
      <div class="actions">
        <button type="submit" class="button primary" disabled={busy || props.incomplete}>
          {props.editing ? 'Save' : props.submitLabel}
        </button>
        {props.editing && (
          <button type="button" onClick={() => void props.onDone()}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

/** Checkboxes for `options`, checked for those in `chosen`; `onChange` gets the new set. */
export function CheckboxSet(props: {
  legend: string;
  name: string;
  options: readonly string[];
  chosen: ReadonlySet<string>;
  onChange: (next: ReadonlySet<string>) => void;
}) {
  return (
    <fieldset>
      <legend>{props.legend}</legend>
      <div class="checks">
        {props.options.map((option) => (
          <label key={option}>
            <input
              type="checkbox"
              name={props.name}
              value={option}
              checked={props.chosen.has(option)}
              onChange={(e) => {
                const next = new Set(props.chosen);
                if (e.currentTarget.checked) next.add(option);
                else next.delete(option);
                props.onChange(next);
              }}
            />
            {option}
          </label>
        ))}
      </div>
    </fieldset>
  );
}

/**
 * A record's Delete, confirmed by `question`: runs `remove`, hands its refusal (or undefined) to
 * `onError`, then reloads the page's records.
 */
export function DeleteButton(props: {
  question: string;
  remove: () => Promise<unknown>;
  onError: (message: string | undefined) => void;
  reload: () => Promise<void>;
}) {
  return (
    <ConfirmButton
      label="Delete"
      danger
      question={props.question}
      onConfirm={async () => {
        props.onError(await attempt(props.remove));
        await props.reload();
      }}
    />
  );
}
