// The 27 permissions (App Mesh 3.0's own list) and the 3 built-in roles (spec "Roles").
// spec/permissions.json is generated from these tables.

export const PERMISSIONS = [
  // applications
  'app-view',
  'app-view-all',
  'app-output-view',
  'app-reg',
  'app-control',
  'app-delete',
  'app-manage-all',
  'app-subscribe',
  // runs and tasks
  'app-run-async',
  'app-run-sync',
  'app-run-task',
  // host
  'host-resource-view',
  'label-view',
  'label-set',
  'label-delete',
  'config-view',
  'config-set',
  'file-download',
  'file-upload',
  // authorization
  'role-view',
  'role-set',
  'role-delete',
  'permission-list',
  'principal-list',
  'principal-set',
  'principal-delete',
  // workflow
  'workflow-admin',
] as const;

export type Permission = (typeof PERMISSIONS)[number];

/**
 * Administrator-equivalent unless the holder has an unprivileged execution user: these run
 * commands or move files as the principal's execution user, which is the daemon's own user (root
 * in a package install) when neither the principal's `execution_user` nor
 * `BaseConfig.DefaultExecUser` is set (or `DisableExecUser` is on) — and that user reads `work/`.
 */
export const EXECUTION_PERMISSIONS = [
  'app-reg',
  'app-run-async',
  'app-run-sync',
  'file-upload',
  'file-download',
] as const satisfies readonly Permission[];

const ADMIN_EQUIVALENT =
  ' Administrator-equivalent when the holder has no unprivileged execution user (it then acts as the daemon’s own user).';

/** One line per permission for docs/reference.md (generated). */
export const PERMISSION_DESCRIPTIONS: Readonly<Record<Permission, string>> = {
  'app-view': 'Read one application (own or shared ones without app-view-all).',
  'app-view-all': 'List and read every application.',
  'app-output-view': 'Read the output of applications (own or shared ones without app-manage-all).',
  'app-reg': `Register or replace applications; they run as the caller’s execution user.${ADMIN_EQUIVALENT}`,
  'app-control': 'Enable and disable applications.',
  'app-delete': 'Delete applications of others (an owner deletes its own without it).',
  'app-manage-all': 'Widen control, output and task rights to every application.',
  'app-subscribe': 'Subscribe to application events on a persistent connection.',
  'app-run-async': `Run a command (or a copy of an application) asynchronously as the caller’s execution user.${ADMIN_EQUIVALENT}`,
  'app-run-sync': `Run a command (or a copy of an application) and wait for its output, as the caller’s execution user.${ADMIN_EQUIVALENT}`,
  'app-run-task': 'Send task payloads to an application’s worker.',
  'host-resource-view': 'Read host resources and metrics.',
  'label-view': 'Read host labels.',
  'label-set': 'Set host labels.',
  'label-delete': 'Delete host labels.',
  'config-view': 'Read the daemon configuration.',
  'config-set':
    'Change the daemon configuration (administrator-equivalent: it sets the default execution user).',
  'file-download': `Download files, read as the caller’s execution user.${ADMIN_EQUIVALENT}`,
  'file-upload': `Upload files, written as the caller’s execution user.${ADMIN_EQUIVALENT}`,
  'role-view': 'Read roles and their permissions.',
  'role-set': 'Create or replace custom roles (administrator-equivalent: it can grant any permission).',
  'role-delete': 'Delete custom roles.',
  'permission-list': 'List the permissions.',
  'principal-list': 'List principal records.',
  'principal-set': 'Set the roles and execution user of principals (administrator-equivalent).',
  'principal-delete': 'Tombstone principal records.',
  'workflow-admin': 'Reserved for pipelines of runs.',
};

export const BUILTIN_ROLES = {
  'svc-admin': [...PERMISSIONS],
  'svc-maintenance': ['app-control', 'app-manage-all', 'app-view-all', 'host-resource-view'],
  'svc-viewer': [
    'app-view-all',
    'app-view',
    'app-output-view',
    'config-view',
    'host-resource-view',
    'label-view',
    'role-view',
  ],
} as const satisfies Record<string, readonly Permission[]>;

export type BuiltinRole = keyof typeof BUILTIN_ROLES;

export function isPermission(value: unknown): value is Permission {
  return typeof value === 'string' && (PERMISSIONS as readonly string[]).includes(value);
}
