// The live application list: a snapshot, then events over WSS applied once per animation frame
// (app-list-store.ts). Only the rows in view are in the DOM (fixed row height, windowed), so 1,000
// apps and 100 events/s stay smooth. CPU and memory are not carried by events: they are re-read
// every 10 s while the page is visible.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { memo } from '../components/memo.ts';
import { can } from '../access.ts';
import { api, errorText } from '../api.ts';
import { live } from '../connection.ts';
import { firstApplications } from '../state/list-prefetch.ts';
import { href } from '../router.ts';
import { AppListStore, type AppRow, type ListQuery, type SortKey } from '../state/app-list-store.ts';
import { frameBatcher } from '../state/frame-batch.ts';
import { formatBytes, formatCpu } from '../format.ts';
import { StateBadge, HealthBadge } from '../components/badges.tsx';
import type { ViewProps } from '../views.ts';

const ROW_HEIGHT = 40;
const OVERSCAN = 10;
const METRICS_EVERY_MS = 10_000;

const COLUMNS: readonly { key: SortKey; label: string; numeric?: boolean }[] = [
  { key: 'name', label: 'Name' },
  { key: 'state', label: 'State' },
  { key: 'health', label: 'Health' },
  { key: 'pid', label: 'PID', numeric: true },
  { key: 'cpu', label: 'CPU', numeric: true },
  { key: 'memory', label: 'Memory', numeric: true },
  { key: 'restarts', label: 'Restarts', numeric: true },
  { key: 'owner', label: 'Owner' },
];

function useLiveList(): { store: AppListStore; version: number; error: string | undefined; loaded: boolean } {
  const store = useMemo(() => new AppListStore(), []);
  const [version, setVersion] = useState(0);
  const [error, setError] = useState<string | undefined>(undefined);
  const [loaded, setLoaded] = useState(false);
  useEffect(() => {
    let stopped = false;
    const render = () => !stopped && setVersion(store.version);
    let first = true;
    const reload = async () => {
      try {
        const apps = first ? await firstApplications() : await api.listApplications();
        first = false;
        if (stopped) return;
        store.flush();
        store.replaceAll(apps);
        setError(undefined);
        setLoaded(true);
        render();
      } catch (cause) {
        if (!stopped) setError(errorText(cause));
      }
    };
    const fetchUnknown = () => {
      for (const name of store.unknown) {
        store.unknown.delete(name);
        api.getApplication(name).then(
          (info) => {
            store.upsert(info);
            render();
          },
          () => undefined,
        );
      }
    };
    const schedule = frameBatcher(() => {
      if (store.flush()) render();
      if (store.unknown.size > 0) fetchUnknown();
    });
    const unsubscribe = live({
      app: '*',
      events: ['START', 'EXIT', 'HEALTH', 'STATUS', 'REMOVED'],
      onEvent: (event) => {
        store.push(event);
        schedule();
      },
      resync: () => void reload(),
    });
    void reload();
    const metrics = setInterval(() => {
      if (document.visibilityState === 'visible') void reload();
    }, METRICS_EVERY_MS);
    return () => {
      stopped = true;
      unsubscribe();
      clearInterval(metrics);
    };
  }, [store]);
  return { store, version, error, loaded };
}

const Row = memo(function Row({ row, top }: { row: AppRow; top: number }) {
  return (
    <tr class="row" style={{ transform: `translateY(${top}px)` }} data-app={row.name}>
      <td class="name">
        <a href={href('/app/:name', { name: row.name })}>{row.name}</a>
      </td>
      <td>
        <StateBadge state={row.state} />
      </td>
      <td>
        <HealthBadge health={row.health} running={row.state === 'running'} />
      </td>
      <td class="num">{row.pid ?? '–'}</td>
      <td class="num">{formatCpu(row.cpu)}</td>
      <td class="num">{formatBytes(row.memory)}</td>
      <td class="num">{row.restarts}</td>
      <td class="owner">{row.owner}</td>
    </tr>
  );
});

export default function AppList({ query }: ViewProps) {
  const { store, version, error, loaded } = useLiveList();
  const [filter, setFilter] = useState(query.get('q') ?? '');
  const [sort, setSort] = useState<{ key: SortKey; descending: boolean }>({ key: 'name', descending: false });
  const listQuery: ListQuery = { filter, sort: sort.key, descending: sort.descending };
  const rows = useMemo(() => store.view(listQuery), [store, version, filter, sort]);
  const scroller = useRef<HTMLDivElement>(null);
  const [viewport, setViewport] = useState({ top: 0, height: 800 });
  useEffect(() => {
    const element = scroller.current;
    if (element === null) return;
    const update = () => setViewport({ top: element.scrollTop, height: element.clientHeight });
    update();
    element.addEventListener('scroll', update, { passive: true });
    const observer = new ResizeObserver(update);
    observer.observe(element);
    return () => {
      element.removeEventListener('scroll', update);
      observer.disconnect();
    };
  }, []);
  const first = Math.max(0, Math.floor(viewport.top / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(rows.length, Math.ceil((viewport.top + viewport.height) / ROW_HEIGHT) + OVERSCAN);
  const shown = rows.slice(first, last);

  return (
    <section class="app-list">
      <div class="toolbar">
        <h1>Applications</h1>
        <label class="filter">
          <span class="visually-hidden">Filter</span>
          <input
            type="search"
            placeholder="Filter by name or owner; state:running"
            value={filter}
            onInput={(e) => setFilter((e.target as HTMLInputElement).value)}
          />
        </label>
        {can('registerApplication') && (
          <a class="button primary" href="#/register">
            Register
          </a>
        )}
      </div>
      <p class="count" aria-live="polite">
        {loaded ? `${rows.length} of ${store.size} applications` : 'Loading…'}
      </p>
      {error !== undefined && (
        <p class="note error" role="alert">
          {error}
        </p>
      )}
      <div class="table-scroll" ref={scroller} tabIndex={0} aria-label="Applications">
        <table class="apps" aria-rowcount={rows.length + 1}>
          <thead>
            <tr>
              {COLUMNS.map((column) => {
                const active = sort.key === column.key;
                return (
                  <th
                    key={column.key}
                    scope="col"
                    class={column.numeric === true ? 'num' : undefined}
                    aria-sort={active ? (sort.descending ? 'descending' : 'ascending') : 'none'}
                  >
                    <button
                      type="button"
                      class="sort"
                      onClick={() => setSort({ key: column.key, descending: active ? !sort.descending : false })}
                    >
                      {column.label}
                      <span aria-hidden="true">{active ? (sort.descending ? ' ▼' : ' ▲') : ''}</span>
                    </button>
                  </th>
                );
              })}
            </tr>
          </thead>
          <tbody style={{ height: `${rows.length * ROW_HEIGHT}px` }}>
            {shown.map((row, i) => (
              <Row key={row.name} row={row} top={(first + i) * ROW_HEIGHT} />
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
