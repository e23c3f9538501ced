import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError } from './respond.js';

/** What a route's handler gets: the request, the response, the path's parameters and the query. */
export interface RouteContext {
  req: IncomingMessage;
  res: ServerResponse;
  params: Record<string, string>;
  query: URLSearchParams;
}

/** One API route; `action` routes change something, so they pass the token and CSRF checks first. */
export interface Route {
  method: 'GET' | 'POST';
  /** A path such as `/api/queues/:queue/records/:id`. */
  path: string;
  action?: boolean;
  handle(ctx: RouteContext): Promise<void> | void;
}

/** Finds the route for a method and path, with its decoded parameters. */
export class Router {
  readonly #routes: { route: Route; pattern: RegExp; names: string[] }[] = [];

  constructor(routes: Route[]) {
    for (const route of routes) {
      const names: string[] = [];
      const source = route.path.replace(/:([a-z]+)/gi, (_, name: string) => {
        names.push(name);
        return '([^/]+)';
      });
      this.#routes.push({ route, pattern: new RegExp(`^${source}$`), names });
    }
  }

  /**
   * The route and its parameters; `allowed` lists the methods the path has when the method matched none.
   *
   * @throws HttpError 400 when a parameter's percent-encoding is malformed (`%E0%A4%A`).
   */
  match(
    method: string,
    path: string,
  ): { route: Route; params: Record<string, string> } | { allowed: string[] } {
    const allowed: string[] = [];
    for (const { route, pattern, names } of this.#routes) {
      const found = pattern.exec(path);
      if (!found) continue;
      if (route.method !== method) {
        allowed.push(route.method);
        continue;
      }
      const params: Record<string, string> = {};
      names.forEach((name, i) => {
        params[name] = decodeParam(found[i + 1] ?? '');
      });
      return { route, params };
    }
    return { allowed };
  }
}

function decodeParam(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new HttpError(400, `malformed percent-encoding in the path: ${JSON.stringify(text.slice(0, 100))}`);
  }
}
