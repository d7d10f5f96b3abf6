// Shows the view of the current route, loading its code the first time (views.ts).
import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { OperationId } from '../access.ts';
import { matchRoute, useHash } from '../router.ts';
import { VIEWS, type ViewEntry, type ViewProps } from '../views.ts';

const loaded = new Map<ViewEntry, ComponentType<ViewProps>>();

export function ViewOutlet({ can }: { can: (operation: OperationId) => boolean }) {
  const hash = useHash();
  const match = matchRoute(
    VIEWS.map((v) => v.path),
    hash === '' || hash === '#' || hash === '#/' ? `#${VIEWS[0]!.path}` : hash,
  );
  const entry = VIEWS.find((v) => v.path === match?.pattern);
  const [, setTick] = useState(0);
  const [error, setError] = useState<string | undefined>(undefined);
  useEffect(() => {
    if (entry === undefined || loaded.has(entry)) return;
    let cancelled = false;
    entry
      .load()
      .then((module) => {
        loaded.set(entry, module.default);
        if (!cancelled) setTick((n) => n + 1);
      })
      .catch((cause: unknown) => !cancelled && setError(String(cause)));
    return () => {
      cancelled = true;
    };
  }, [entry]);
  useEffect(() => {
    if (entry !== undefined) document.title = `${entry.title} · svc`;
  }, [entry]);

  if (match === undefined || entry === undefined)
    return (
      <section>
        <h1>Not found</h1>
        <p>
          Nothing here. <a href="#/apps">Back to the applications</a>.
        </p>
      </section>
    );
  if ((entry.operation !== undefined && !can(entry.operation)) || !(entry.when?.() ?? true))
    return (
      <section>
        <h1>{entry.title}</h1>
        <p class="note">You do not have the permission to see this.</p>
      </section>
    );
  const View = loaded.get(entry);
  if (View === undefined)
    return error === undefined ? <p aria-busy="true">Loading…</p> : <p role="alert">Cannot load this view: {error}</p>;
  return <View key={`${match.pattern}|${JSON.stringify(match.params)}`} params={match.params} query={match.query} />;
}
