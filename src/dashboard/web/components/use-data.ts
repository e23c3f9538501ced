import { useCallback, useEffect, useState } from 'preact/hooks';

/** Loads data with `load` whenever `key` changes; `reload` loads again. */
export function useData<T>(load: () => Promise<T>, key: string) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const reload = useCallback(() => {
    setLoading(true);
    load()
      .then((value) => {
        setData(value);
        setError(undefined);
      })
      .catch((e: unknown) => setError(e instanceof Error ? e.message : String(e)))
      .finally(() => setLoading(false));
  }, [key]);
  useEffect(reload, [reload]);
  return { data, error, loading, reload, setData };
}
