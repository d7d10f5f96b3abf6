// Send a task to a worker application (POST /svc/app/{name}/task) and show its reply.
import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api.ts';
import type { ViewProps } from '../views.ts';

export default function SendTask({ query }: ViewProps) {
  const [app, setApp] = useState(query.get('app') ?? '');
  const [payload, setPayload] = useState('');
  const [timeout, setTimeoutSeconds] = useState('30');
  const [reply, setReply] = useState<{ text: string; taskId: string | undefined } | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const [names, setNames] = useState<string[]>([]);
  useEffect(() => {
    // Suggestions only: running applications (a worker runs its loop); a refusal just leaves none.
    api.listApplications().then(
      (apps) => setNames(apps.filter((a) => typeof a.pid === 'number' && a.pid > 0).map((a) => a.name).sort()),
      () => undefined,
    );
  }, []);
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    setReply(undefined);
    setBusy(true);
    try {
      const seconds = Number(timeout);
      const result = await api.runTask(app.trim(), payload, Number.isFinite(seconds) && seconds > 0 ? { timeoutSeconds: seconds } : {});
      setReply({ text: result.text(), taskId: result.taskId });
    } catch (cause) {
      setError(errorText(cause));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section>
      <h1>Send a task</h1>
      <p class="note">The worker application fetches the task, works on it, and its reply appears below.</p>
      <form class="app-form" onSubmit={(e) => void submit(e)}>
        <div class="field">
          <label for="task-app">Worker application</label>
          <input
            id="task-app"
            type="text"
            required
            list="task-apps"
            autoComplete="off"
            value={app}
            onInput={(e) => setApp((e.target as HTMLInputElement).value)}
          />
          <datalist id="task-apps">
            {names.map((n) => (
              <option key={n} value={n} />
            ))}
          </datalist>
        </div>
        <div class="field">
          <label for="task-payload">Payload</label>
          <textarea id="task-payload" rows={4} value={payload} onInput={(e) => setPayload((e.target as HTMLTextAreaElement).value)} />
        </div>
        <div class="field">
          <label for="task-timeout">Timeout (seconds)</label>
          <input id="task-timeout" type="number" min={1} value={timeout} onInput={(e) => setTimeoutSeconds((e.target as HTMLInputElement).value)} />
        </div>
        <div class="actions">
          <button type="submit" class="primary" disabled={busy || app.trim() === ''}>
            {busy ? 'Waiting for the reply…' : 'Send'}
          </button>
        </div>
      </form>
      <div role="status" aria-live="polite">
        {error !== undefined && <p class="note error">{error}</p>}
        {reply !== undefined && (
          <section class="panel">
            <h2>Reply{reply.taskId === undefined ? '' : ` to task ${reply.taskId}`}</h2>
            <pre class="output" tabIndex={0} data-testid="task-reply">
              {reply.text}
            </pre>
          </section>
        )}
      </div>
    </section>
  );
}
