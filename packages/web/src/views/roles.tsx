// Roles (administration): each role and its permissions. The built-in roles (svc-admin,
// svc-maintenance, svc-viewer) are shown but never changed; other roles can be created, edited
// and deleted (the daemon refuses to delete a role an active principal still holds).
import { useState } from 'preact/hooks';
import { can } from '../access.ts';
import { api } from '../api.ts';
import { AdminForm, AdminTable, CheckboxSet, DeleteButton } from '../components/admin.tsx';
import { useResource } from '../admin/use-resource.ts';
import type { ViewProps } from '../views.ts';

const BUILT_IN = /^svc-(admin|maintenance|viewer)$/;

export default function Roles(_props: ViewProps) {
  const roles = useResource(() => api.listRoles() as Promise<Record<string, string[]>>);
  const permissions = useResource(async () =>
    can('listPermissions') ? ((await api.listPermissions()) as string[]) : ([] as string[]),
  );
  const [editing, setEditing] = useState<string | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const entries = Object.entries(roles.data ?? {}).sort(([a], [b]) => a.localeCompare(b));
  const known = [...new Set([...(permissions.data ?? []), ...entries.flatMap(([, p]) => p)])];
  const mayEdit = can('setRole');
  const mayDelete = can('deleteRole');

  return (
    <AdminTable
      title="Roles"
      error={roles.error ?? error}
      loading={roles.loading}
      columns={mayEdit || mayDelete ? ['Role', 'Permissions', 'Actions'] : ['Role', 'Permissions']}
      after={
        mayEdit && (
          <RoleForm
            key={editing ?? 'new'}
            role={editing}
            granted={editing === undefined ? [] : (roles.data?.[editing] ?? [])}
            permissions={known}
            onDone={async () => {
              setEditing(undefined);
              await roles.reload();
            }}
          />
        )
      }
    >
      {entries.map(([role, granted]) => (
        <tr key={role} data-role={role}>
          <td class="mono">
            {role}
            {BUILT_IN.test(role) && <span class="badge muted">built-in</span>}
          </td>
          <td class="permissions">
            {granted.length === 0 ? <span class="muted">none</span> : granted.join(', ')}
          </td>
          {(mayEdit || mayDelete) && (
            <td>
              <div class="row-actions">
                {!BUILT_IN.test(role) && mayEdit && (
                  <button type="button" aria-label={`Edit ${role}`} onClick={() => setEditing(role)}>
                    Edit
                  </button>
                )}
                {!BUILT_IN.test(role) && mayDelete && (
                  <DeleteButton
                    question={`Delete role ${role}?`}
                    remove={() => api.deleteRole(role)}
                    onError={setError}
                    reload={roles.reload}
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

function RoleForm(props: {
  role: string | undefined;
  granted: readonly string[];
  permissions: readonly string[];
  onDone: () => Promise<void>;
}) {
  const [name, setName] = useState(props.role ?? '');
  const [chosen, setChosen] = useState<ReadonlySet<string>>(new Set(props.granted));
  return (
    <AdminForm
      title={props.role === undefined ? 'Create a role' : `Edit ${props.role}`}
      save={() => api.setRole(name.trim(), [...chosen])}
      onDone={props.onDone}
      editing={props.role !== undefined}
      submitLabel="Create role"
      incomplete={name.trim() === ''}
    >
      <label class="field">
        Role name
        <input
          name="role"
          value={name}
          required
          maxLength={128}
          readOnly={props.role !== undefined}
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </label>
      <CheckboxSet
        legend="Permissions"
        name="permission"
        options={props.permissions}
        chosen={chosen}
        onChange={setChosen}
      />
    </AdminForm>
  );
}
