import { sendJson } from '../http/respond.js';
import type { Route } from '../http/router.js';
import { CSRF_COOKIE, SECURITY_HEADERS } from '../http/security.js';
import type { ConsoleContext } from './context.js';

/** How often an idle event stream says it is still there (proxies close silent connections). */
const KEEPALIVE_MS = 15_000;

/**
 * The session (may this console act? the CSRF token), the overview with its chart history, and the live
 * stream of overview updates (Server-Sent Events, `event: overview`).
 */
export function liveRoutes(ctx: ConsoleContext, basePath: string): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/session',
      handle({ res }) {
        const csrf = ctx.guard.issueCsrf();
        res.setHeader(
          'Set-Cookie',
          `${CSRF_COOKIE}=${encodeURIComponent(csrf)}; Path=${basePath || '/'}; SameSite=Strict; HttpOnly`,
        );
        sendJson(res, 200, { writable: ctx.guard.writable, csrf });
      },
    },
    {
      method: 'GET',
      path: '/api/overview',
      async handle({ res }) {
        const snapshot = await ctx.feed.current();
        sendJson(res, 200, { ...snapshot, history: ctx.feed.history.toJSON() });
      },
    },
    {
      method: 'GET',
      path: '/api/events',
      async handle({ req, res }) {
        res.writeHead(200, {
          ...SECURITY_HEADERS,
          'Content-Type': 'text/event-stream; charset=utf-8',
          'Cache-Control': 'no-store',
          Connection: 'keep-alive',
          'X-Accel-Buffering': 'no',
        });
        res.write('retry: 2000\n\n');
        const send = (event: string, data: unknown) =>
          res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
        const unsubscribe = ctx.feed.subscribe((update) => {
          if ('snapshot' in update) send('overview', update.snapshot);
          else send('feed-error', update);
        });
        const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
        keepalive.unref();
        req.on('close', () => {
          clearInterval(keepalive);
          unsubscribe();
        });
        const first = await ctx.feed.current().catch(() => undefined);
        if (first && !res.writableEnded) send('overview', first);
      },
    },
  ];
}
