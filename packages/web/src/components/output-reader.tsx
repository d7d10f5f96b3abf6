// Reads output back from any byte position of the current or an older output file
// (GET .../output?stdout_index=N&stdout_position=P), a page at a time.
import { useState } from 'preact/hooks';
import { api, errorText } from '../api.ts';

const PAGE_BYTES = 64 * 1024;

/** `older`: how many older output files the daemon keeps (`stdout_file_count`). */
export function OutputReader({ name, older }: { name: string; older: number }) {
  const [index, setIndex] = useState(0);
  const [position, setPosition] = useState(0);
  const [page, setPage] = useState<{ text: string; from: number; next: number } | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const read = async (from: number) => {
    try {
      const chunk = await api.getOutput(name, { index, position: from, maxSize: PAGE_BYTES });
      setPage({ text: chunk.output, from, next: chunk.nextPosition });
      setPosition(chunk.nextPosition);
      setError(undefined);
    } catch (cause) {
      setError(errorText(cause));
    }
  };
  return (
    <div class="output-reader">
      <form
        class="actions"
        onSubmit={(e) => {
          e.preventDefault();
          void read(position);
        }}
      >
        <label>
          File{' '}
          <select value={index} onChange={(e) => setIndex(Number((e.target as HTMLSelectElement).value))}>
            <option value={0}>current</option>
            {Array.from({ length: Math.max(0, Math.min(older, 100)) }, (_, i) => (
              <option key={i + 1} value={i + 1}>
                {`previous ${i + 1}`}
              </option>
            ))}
          </select>
        </label>
        <label>
          From byte{' '}
          <input
            type="number"
            min={0}
            step={1}
            value={position}
            onInput={(e) => setPosition(Math.max(0, Math.floor(Number((e.target as HTMLInputElement).value) || 0)))}
          />
        </label>
        <button type="submit">Read</button>
      </form>
      {error !== undefined && (
        <p class="note error" role="alert">
          {error}
        </p>
      )}
      {page !== undefined && (
        <>
          <p class="note">
            Bytes {page.from}–{page.next}
          </p>
          <pre class="output" tabIndex={0} data-testid="output-read" aria-label="Output read back">
            {page.text === '' ? <span class="muted">(nothing at this position)</span> : page.text}
          </pre>
          {page.next > page.from && (
            <button type="button" onClick={() => void read(page.next)}>
              Read on
            </button>
          )}
        </>
      )}
    </div>
  );
}
