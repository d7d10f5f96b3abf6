// The registry of views: one line per screen. A view is one file under views/ whose default export
// is a component taking ViewProps; it is loaded (code-split) the first time its route is shown.
// `nav` lists it in the navigation; `operation` hides it (link and route) from principals that may
// not call that operation (access.ts `can`).
import type { ComponentType } from 'preact';
import type { OperationId } from './access.ts';
import { inClusterMode } from './admin/cluster-mode.ts';

export interface ViewProps {
  /** `:name` segments of the route, decoded. */
  params: Record<string, string>;
  query: URLSearchParams;
}

export interface ViewEntry {
  /** Hash route pattern: `/apps`, `/app/:name`. The first entry is the home route. */
  path: string;
  title: string;
  nav?: 'main' | 'admin' | 'cluster';
  operation?: OperationId;
  /** Shown (link and route) only while this also holds, e.g. cluster mode; read signals inside. */
  when?: () => boolean;
  load: () => Promise<{ default: ComponentType<ViewProps> }>;
}

export const VIEWS: readonly ViewEntry[] = [
  { path: '/apps', title: 'Applications', nav: 'main', operation: 'listApplications', load: () => import('./views/app-list.tsx') },
  { path: '/app/:name', title: 'Application', operation: 'getApplication', load: () => import('./views/app-detail.tsx') },
  { path: '/register', title: 'Register', operation: 'registerApplication', load: () => import('./views/app-form.tsx') },
  { path: '/app/:name/edit', title: 'Edit', operation: 'registerApplication', load: () => import('./views/app-form.tsx') },
  { path: '/run', title: 'Run', nav: 'main', operation: 'runApplication', load: () => import('./views/run-command.tsx') },
  { path: '/task', title: 'Task', nav: 'main', operation: 'runTask', load: () => import('./views/send-task.tsx') },
  { path: '/admin/principals', title: 'Principals', nav: 'admin', operation: 'listPrincipals', load: () => import('./views/principals.tsx') },
  { path: '/admin/roles', title: 'Roles', nav: 'admin', operation: 'listRoles', load: () => import('./views/roles.tsx') },
  { path: '/admin/labels', title: 'Labels', nav: 'admin', operation: 'listLabels', load: () => import('./views/labels.tsx') },
  { path: '/admin/config', title: 'Config', nav: 'admin', operation: 'getConfig', load: () => import('./views/host-config.tsx') },
  { path: '/cluster', title: 'Cluster', nav: 'cluster', operation: 'listClusterNodes', when: inClusterMode, load: () => import('./views/cluster.tsx') },
];
