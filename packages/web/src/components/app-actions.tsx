// Start (enable), stop (disable), restart (disable then enable) and delete of one application, each
// shown only when the principal may do it; stop, restart and delete ask for confirmation.
import { useState } from 'preact/hooks';
import type { AppInfo } from '@svc/client/browser';
import { can } from '../access.ts';
import { api, errorText } from '../api.ts';
import { href, navigate } from '../router.ts';
import { ConfirmButton } from './confirm-button.tsx';

export function AppActions({ app, onChanged }: { app: AppInfo; onChanged: (info?: AppInfo) => void }) {
  const [error, setError] = useState<string | undefined>(undefined);
  const [status, setStatus] = useState<string>('');
  const scope = { owner_principal_id: app.owner_principal_id };
  const name = app.name;
  const act = (label: string, work: () => Promise<AppInfo | undefined>) => async () => {
    setError(undefined);
    setStatus(`${label}…`);
    try {
      onChanged(await work());
      setStatus(`${label}: done`);
    } catch (cause) {
      setStatus('');
      setError(`${label} failed: ${errorText(cause)}`);
    }
  };
  const enabled = app.enabled !== false;
  const control = can('enableApplication', scope);
  return (
    <div>
      <div class="actions" role="group" aria-label="Actions">
        {control && !enabled && (
          <button type="button" class="primary" onClick={() => void act('Start', () => api.enableApplication(name))()}>
            Start
          </button>
        )}
        {can('disableApplication', scope) && enabled && (
          <ConfirmButton
            label="Stop"
            question={`Stop ${name}? It is disabled until started again.`}
            onConfirm={act('Stop', () => api.disableApplication(name))}
          />
        )}
        {control && can('disableApplication', scope) && (
          <ConfirmButton
            label="Restart"
            question={`Restart ${name}? Its process is stopped and started again.`}
            onConfirm={act('Restart', async () => {
              await api.disableApplication(name);
              return api.enableApplication(name);
            })}
          />
        )}
        {can('registerApplication', scope) && (
          <a class="button" href={href('/app/:name/edit', { name })}>
            Edit
          </a>
        )}
        {can('deleteApplication', scope) && (
          <ConfirmButton
            label="Delete"
            danger
            question={`Delete ${name}? Its process is stopped and its definition removed.`}
            onConfirm={act('Delete', async () => {
              await api.deleteApplication(name);
              navigate('#/apps');
              return undefined;
            })}
          />
        )}
      </div>
      <p class="note" role="status" aria-live="polite">
        {status}
      </p>
      {error !== undefined && (
        <p class="note error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}
