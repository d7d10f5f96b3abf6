// The 27 permissions and 3 built-in roles (CONTRACT §6, spec "Roles"). spec/permissions.json is
// generated from these tables.

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
  'principal-view',
  'principal-set',
  'principal-delete',
  // cluster
  'cluster-app-view',
  'cluster-app-reg',
  // workflow
  'workflow-admin',
] as const;

export type Permission = (typeof PERMISSIONS)[number];

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
