// One application: actions, runtime fields (kept current by events), its definition, and its output
// following live, with reading back from any position or older file.
import { useEffect, useState } from 'preact/hooks';
import type { AppInfo } from '@svc/client/browser';
import { can } from '../access.ts';
import { api, errorText } from '../api.ts';
import { live } from '../connection.ts';
import { AppActions } from '../components/app-actions.tsx';
import { HealthBadge, StateBadge } from '../components/badges.tsx';
import { OutputPane, useLiveOutput } from '../components/live-output.tsx';
import { OutputReader } from '../components/output-reader.tsx';
import { applyEvent, rowOf } from '../state/app-list-store.ts';
import { definitionOf } from '../state/app-definition.ts';
import { formatBytes, formatCpu, formatTime } from '../format.ts';
import type { ViewProps } from '../views.ts';

function useApp(name: string): { app: AppInfo | undefined; error: string | undefined; set: (info?: AppInfo) => void } {
  const [app, setApp] = useState<AppInfo | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  useEffect(() => {
    let stopped = false;
    const reload = () =>
      api.getApplication(name).then(
        (info) => !stopped && (setApp(info), setError(undefined)),
        (cause: unknown) => !stopped && setError(errorText(cause)),
      );
    const unsubscribe = live({
      app: name,
      events: ['START', 'EXIT', 'HEALTH', 'STATUS', 'REMOVED'],
      onEvent: (event) => {
        if (event.event_type === 'REMOVED') setError(`${name} was deleted.`);
        setApp((current) => (current === undefined ? current : applyEvent(current, event)));
      },
      resync: () => void reload(),
    });
    void reload();
    // CPU, memory and the output file count are not carried by events: re-read while visible.
    const metrics = setInterval(() => {
      if (document.visibilityState === 'visible') void reload();
    }, 10_000);
    return () => {
      stopped = true;
      unsubscribe();
      clearInterval(metrics);
    };
  }, [name]);
  return {
    app,
    error,
    set: (info) => {
      if (info !== undefined) setApp(info);
      else void api.getApplication(name).then(setApp, () => undefined);
    },
  };
}

function Runtime({ app }: { app: AppInfo }) {
  const row = rowOf(app);
  const fields: [string, preact.ComponentChildren][] = [
    ['State', <StateBadge state={row.state} />],
    ['Lifecycle', typeof app['state'] === 'string' ? app['state'] : '–'],
    ['Health', <HealthBadge health={row.health} running={row.state === 'running'} />],
    ['PID', row.pid ?? '–'],
    ['CPU', formatCpu(row.cpu)],
    ['Memory', formatBytes(row.memory)],
    ['Restarts', row.restarts],
    ['Owner', row.owner || '–'],
    ['Last start', formatTime(app.last_start_time)],
    ['Last exit', formatTime(app.last_exit_time)],
    ['Exit code', app.return_code ?? '–'],
    ['Next start', formatTime(app.next_start_time)],
    ['Process', app.process_uuid ?? '–'],
  ];
  if (row.lastError !== undefined) fields.push(['Last error', row.lastError]);
  if (Array.isArray(app.waiting_for) && app.waiting_for.length > 0) fields.push(['Waiting for', app.waiting_for.join(', ')]);
  return (
    <dl class="fields" data-testid="runtime">
      {fields.flatMap(([label, value]) => [
        <dt key={`t-${label}`}>{label}</dt>,
        <dd key={`d-${label}`} data-field={label}>
          {value}
        </dd>,
      ])}
    </dl>
  );
}

function Output({ name, older }: { name: string; older: number }) {
  const output = useLiveOutput(name);
  return (
    <section class="panel" aria-labelledby="output-title">
      <h2 id="output-title">Output</h2>
      <p class="note" aria-live="polite">
        {output.error !== undefined
          ? `Cannot read output: ${output.error}`
          : `${output.next} bytes${output.exitCode !== undefined ? `, exited with ${output.exitCode ?? 'unknown code'}` : ''}`}
      </p>
      <OutputPane text={output.text} label={`Output of ${name}`} />
      <details>
        <summary>Read back from a position or an older file</summary>
        <OutputReader name={name} older={older} />
      </details>
    </section>
  );
}

export default function AppDetail({ params }: ViewProps) {
  const name = params['name'] ?? '';
  const { app, error, set } = useApp(name);
  return (
    <section>
      <p>
        <a href="#/apps">← Applications</a>
      </p>
      <h1>{name}</h1>
      {error !== undefined && (
        <p class="note error" role="alert">
          {error}
        </p>
      )}
      {app === undefined ? (
        error === undefined && <p aria-busy="true">Loading…</p>
      ) : (
        <>
          <AppActions app={app} onChanged={set} />
          <div class="panels">
            <section class="panel" aria-labelledby="runtime-title">
              <h2 id="runtime-title">Runtime</h2>
              <Runtime app={app} />
            </section>
            <section class="panel" aria-labelledby="definition-title">
              <h2 id="definition-title">Definition</h2>
              <pre class="output" tabIndex={0} data-testid="definition">
                {JSON.stringify(definitionOf(app), null, 2)}
              </pre>
            </section>
          </div>
          {can('getApplicationOutput', { owner_principal_id: app.owner_principal_id }) && (
            <Output name={name} older={typeof app.stdout_file_count === 'number' ? app.stdout_file_count : 0} />
          )}
        </>
      )}
    </section>
  );
}
