// Whether this daemon runs in cluster mode, for the cluster view's entry in the navigation: a
// stand-alone daemon answers GET /svc/cluster/nodes with 404 (docs/cluster.md), a cluster node with
// its registry's node reports. Asked once per sign-in, only by principals allowed to ask.
import { effect, signal } from '@preact/signals';
import { ApiError } from '@svc/client/browser';
import { decide, self } from '../access.ts';
import { api } from '../api.ts';

/** undefined until known; false in stand-alone mode or for principals who may not see nodes. */
export const clusterMode = signal<boolean | undefined>(undefined);

let asked: string | undefined;

async function ask(): Promise<void> {
  try {
    await api.request({ method: 'GET', path: '/svc/cluster/nodes' });
    clusterMode.value = true;
  } catch (error) {
    // 404: cluster mode is off. Anything else (the daemon unreachable): not shown until known.
    clusterMode.value = error instanceof ApiError && error.status === 404 ? false : undefined;
    if (clusterMode.value === undefined) asked = undefined;
  }
}

effect(() => {
  const principal = self.value;
  if (principal === undefined) {
    asked = undefined;
    clusterMode.value = undefined;
    return;
  }
  if (asked === principal.principal_id) return;
  asked = principal.principal_id;
  if (!decide(principal, 'listClusterNodes')) clusterMode.value = false;
  else void ask();
});

/** For the view registry: shown only in cluster mode (re-renders when it becomes known). */
export function inClusterMode(): boolean {
  return clusterMode.value === true;
}
