// Run a command once (POST /svc/app/run) and watch its output stream live until it exits.
import { useState } from 'preact/hooks';
import type { AsyncRun } from '@svc/client/browser';
import { api, errorText } from '../api.ts';
import { OutputPane, useLiveOutput } from '../components/live-output.tsx';
import type { ViewProps } from '../views.ts';

function RunOutput({ run }: { run: AsyncRun }) {
  const output = useLiveOutput(run.name, run.process_uuid);
  return (
    <section class="panel" aria-labelledby="run-output-title">
      <h2 id="run-output-title">Output of {run.name}</h2>
      <p class="note" role="status" aria-live="polite" data-testid="run-status">
        {output.exitCode !== undefined
          ? `Exited with code ${output.exitCode ?? 'unknown'}`
          : output.finished
            ? 'Finished'
            : 'Running…'}
      </p>
      {output.error !== undefined && (
        <p class="note error" role="alert">
          {output.error}
        </p>
      )}
      <OutputPane text={output.text} label={`Output of ${run.name}`} />
    </section>
  );
}

export default function RunCommand(_props: ViewProps) {
  const [command, setCommand] = useState('');
  const [shell, setShell] = useState(true);
  const [timeout, setTimeoutSeconds] = useState('');
  const [run, setRun] = useState<AsyncRun | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    setBusy(true);
    try {
      const seconds = Number(timeout);
      setRun(
        await api.run(
          { command, shell },
          timeout.trim() !== '' && Number.isFinite(seconds) && seconds > 0 ? { timeoutSeconds: seconds } : {},
        ),
      );
    } catch (cause) {
      setError(errorText(cause));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section>
      <h1>Run a command</h1>
      <form class="app-form" onSubmit={(e) => void submit(e)}>
        <div class="field">
          <label for="run-command">Command</label>
          <textarea id="run-command" rows={3} required value={command} onInput={(e) => setCommand((e.target as HTMLTextAreaElement).value)} />
        </div>
        <div class="field">
          <label for="run-shell">Through /bin/sh</label>
          <input id="run-shell" type="checkbox" checked={shell} onChange={(e) => setShell((e.target as HTMLInputElement).checked)} />
        </div>
        <div class="field">
          <label for="run-timeout">Timeout (seconds)</label>
          <input id="run-timeout" type="number" min={1} value={timeout} onInput={(e) => setTimeoutSeconds((e.target as HTMLInputElement).value)} />
        </div>
        <div class="actions">
          <button type="submit" class="primary" disabled={busy || command.trim() === ''}>
            Run
          </button>
        </div>
      </form>
      {error !== undefined && (
        <p class="note error" role="alert">
          {error}
        </p>
      )}
      {run !== undefined && <RunOutput key={run.process_uuid} run={run} />}
    </section>
  );
}
