import type { AppState } from '../state/app-list-store.ts';

export function StateBadge({ state }: { state: AppState }) {
  return <span class={`badge state-${state}`}>{state}</span>;
}

export function HealthBadge({ health, running }: { health: 0 | 1 | undefined; running: boolean }) {
  if (!running || health === undefined) return <span class="badge muted">–</span>;
  return health === 0 ? <span class="badge ok">healthy</span> : <span class="badge bad">unhealthy</span>;
}
