import { useEffect, useState } from 'preact/hooks';

/** Where the page is: the console routes in the address's fragment (`#/dead-letters/index?reason=…`). */
export interface Route {
  parts: string[];
  query: URLSearchParams;
}

function current(): Route {
  const text = location.hash.replace(/^#/, '') || '/';
  const [path = '/', qs = ''] = text.split('?');
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(qs) };
}

/** The current route, updated on navigation. */
export function useRoute(): Route {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const update = () => setRoute(current());
    addEventListener('hashchange', update);
    return () => removeEventListener('hashchange', update);
  }, []);
  return route;
}

/** The fragment link of a route. */
export function href(parts: string[], query?: Record<string, string | undefined>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v) params.set(k, v);
  const qs = params.toString();
  return `#/${parts.map(encodeURIComponent).join('/')}${qs ? `?${qs}` : ''}`;
}

/** Goes to a route. */
export function navigate(parts: string[], query?: Record<string, string | undefined>): void {
  location.hash = href(parts, query);
}
