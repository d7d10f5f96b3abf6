// One daemon read for a view: its data, the error to show, and `reload()` after a change. A reload
// keeps the previous data on screen until the new answer arrives (no flash of "Loading…").
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, errorText } from '../api.ts';

export interface Resource<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload: () => Promise<void>;
}

export function useResource<T>(load: () => Promise<T>): Resource<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const alive = useRef(true);
  const loader = useRef(load);
  loader.current = load;
  const reload = useCallback(async () => {
    setLoading(true);
    try {
      const next = await loader.current();
      if (!alive.current) return;
      setData(next);
      setError(undefined);
    } catch (cause) {
      if (alive.current) setError(errorText(cause));
    } finally {
      if (alive.current) setLoading(false);
    }
  }, []);
  useEffect(() => {
    alive.current = true;
    void reload();
    return () => {
      alive.current = false;
    };
  }, [reload]);
  return { data, error, loading, reload };
}

/** GET `path` as JSON (operations @svc/client has no method for, e.g. /svc/cluster/*). */
export async function getJson<T>(path: string): Promise<T> {
  const result = await api.request({ method: 'GET', path });
  return JSON.parse(new TextDecoder().decode(result.body)) as T;
}

/** Runs a change and reports its error text (undefined on success). */
export async function attempt(change: () => Promise<unknown>): Promise<string | undefined> {
  try {
    await change();
    return undefined;
  } catch (cause) {
    return errorText(cause);
  }
}
