// Principals (administration): who tokens name and the roles each holds. Adding a principal binds
// roles to an id (a built-in identity user's id, an external issuer's `sub`, `client:<id>`);
// passwords of built-in users are managed by the identity's own administration (docs/web-ui.md).
// Deleting tombstones the record: the daemon refuses its tokens from then on.
import { useState } from 'preact/hooks';
import { can, self } from '../access.ts';
import { api } from '../api.ts';
import { AdminForm, AdminTable, CheckboxSet, DeleteButton } from '../components/admin.tsx';
import { useResource } from '../admin/use-resource.ts';
import type { ViewProps } from '../views.ts';

interface PrincipalRecord {
  principal_id: string;
  roles: string[];
  status: 'active' | 'tombstoned';
  execution_user?: string;
}

export default function Principals(_props: ViewProps) {
  const principals = useResource(() => api.listPrincipals() as Promise<Record<string, PrincipalRecord>>);
  const roles = useResource(async () =>
    can('listRoles') ? Object.keys(await api.listRoles()) : ([] as string[]),
  );
  const [editing, setEditing] = useState<PrincipalRecord | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const list = Object.values(principals.data ?? {}).sort((a, b) =>
    a.principal_id.localeCompare(b.principal_id),
  );
  const mayEdit = can('setPrincipal');
  const mayDelete = can('deletePrincipal');

  return (
    <AdminTable
      title="Principals"
      note="A principal is whoever a token names; its roles decide what it may do. Deleting one tombstones it: its tokens are refused from then on."
      error={principals.error ?? error}
      loading={principals.loading}
      columns={
        mayEdit || mayDelete ? ['Principal', 'Roles', 'Status', 'Actions'] : ['Principal', 'Roles', 'Status']
      }
      after={
        mayEdit && (
          <PrincipalForm
            key={editing?.principal_id ?? 'new'}
            editing={editing}
            roles={roles.data ?? []}
            onDone={async () => {
              setEditing(undefined);
              await principals.reload();
            }}
          />
        )
      }
    >
      {list.map((p) => (
        <tr key={p.principal_id} data-principal={p.principal_id}>
          <td class="mono">{p.principal_id}</td>
          <td>
            {p.roles.length === 0 ? (
              <span class="muted">none</span>
            ) : (
              p.roles.map((r) => (
                <span key={r} class="badge">
                  {r}
                </span>
              ))
            )}
          </td>
          <td>
            <span class={p.status === 'active' ? 'badge ok' : 'badge bad'}>{p.status}</span>
          </td>
          {(mayEdit || mayDelete) && (
            <td>
              <div class="row-actions">
                {mayEdit && (
                  <button type="button" onClick={() => setEditing(p)} aria-label={`Edit ${p.principal_id}`}>
                    Edit
                  </button>
                )}
                {mayDelete && p.status === 'active' && p.principal_id !== self.value?.principal_id && (
                  <DeleteButton
                    question={`Delete principal ${p.principal_id}? Its tokens are refused from then on.`}
                    remove={() => api.deletePrincipal(p.principal_id)}
                    onError={setError}
                    reload={principals.reload}
                  />
                )}
              </div>
            </td>
          )}
        </tr>
      ))}
    </AdminTable>
  );
}

function PrincipalForm(props: {
  editing: PrincipalRecord | undefined;
  roles: readonly string[];
  onDone: () => Promise<void>;
}) {
  const [id, setId] = useState(props.editing?.principal_id ?? '');
  const [chosen, setChosen] = useState<ReadonlySet<string>>(new Set(props.editing?.roles ?? []));
  const roles = [...new Set([...props.roles, ...chosen])].sort();
  return (
    <AdminForm
      title={props.editing === undefined ? 'Add a principal' : `Edit ${props.editing.principal_id}`}
      save={() => api.setPrincipalRoles(id.trim(), [...chosen])}
      onDone={props.onDone}
      editing={props.editing !== undefined}
      submitLabel="Add principal"
      incomplete={id.trim() === ''}
    >
      <label class="field">
        Principal id
        <input
          name="principal"
          value={id}
          required
          maxLength={512}
          readOnly={props.editing !== undefined}
          onInput={(e) => setId(e.currentTarget.value)}
          aria-describedby="principal-help"
        />
        <span class="help" id="principal-help">
          A built-in user's id, an external issuer's subject, or <code>client:&lt;client id&gt;</code>.
        </span>
      </label>
      <CheckboxSet legend="Roles" name="role" options={roles} chosen={chosen} onChange={setChosen} />
    </AdminForm>
  );
}
