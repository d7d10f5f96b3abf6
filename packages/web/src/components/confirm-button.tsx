// A destructive or disruptive action behind a confirmation dialog (a real <dialog>: focus moves into
// it, Escape cancels, focus returns to the button).
import type { ComponentChildren } from 'preact';
import { useRef, useState } from 'preact/hooks';

export interface ConfirmButtonProps {
  /** The button's label, e.g. "Delete". */
  label: string;
  /** What the dialog asks, e.g. "Delete application web-1?". */
  question: ComponentChildren;
  /** The confirming button's label (default: `label`). */
  confirmLabel?: string;
  danger?: boolean;
  disabled?: boolean;
  onConfirm: () => Promise<unknown> | void;
}

export function ConfirmButton(props: ConfirmButtonProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const close = () => dialog.current?.close();
  return (
    <>
      <button
        type="button"
        class={props.danger === true ? 'danger' : undefined}
        disabled={props.disabled === true || busy}
        onClick={() => dialog.current?.showModal()}
      >
        {props.label}
      </button>
      <dialog ref={dialog} aria-label={props.label}>
        <p>{props.question}</p>
        <div class="actions">
          <button
            type="button"
            class={props.danger === true ? 'danger confirm' : 'primary'}
            disabled={busy}
            onClick={() => {
              close();
              setBusy(true);
              void Promise.resolve(props.onConfirm()).finally(() => setBusy(false));
            }}
          >
            {props.confirmLabel ?? props.label}
          </button>
          <button type="button" autoFocus onClick={close}>
            Cancel
          </button>
        </div>
      </dialog>
    </>
  );
}
