import { overrideBreaker } from '../../breaker/override-breaker.js';
import { HttpError, readJson, sendJson } from '../http/respond.js';
import type { Route } from '../http/router.js';
import type { ConsoleContext } from './context.js';

/** The breakers, and an operator's override of one (force open, force closed, reset), audited. */
export function breakerRoutes(ctx: ConsoleContext): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/breakers',
      async handle({ res }) {
        sendJson(res, 200, { breakers: await ctx.backend.breakers.list(), overrides: true });
      },
    },
    {
      method: 'POST',
      path: '/api/breakers/:dependency',
      action: true,
      async handle({ req, res, params }) {
        const dependency = params.dependency ?? '';
        const body = await readJson(req);
        const known = (await ctx.backend.breakers.list()).find((b) => b.dependency === dependency);
        if (!known) throw new HttpError(404, `no breaker state for "${dependency}"`);
        // overrideBreaker checks the op and the reason (required), applies it, then writes the audit entry.
        const result = await overrideBreaker(
          { store: ctx.backend.breakers, audit: ctx.backend.audit },
          dependency,
          body.action as never,
          { reason: body.reason as string, by: ctx.actorOf(req) },
          known.options,
        );
        ctx.feed.refresh().catch(() => {});
        sendJson(res, 200, {
          message: `${dependency}: ${String(body.action)} applied, now ${result.snapshot.state}`,
          breaker: result.snapshot,
        });
      },
    },
  ];
}
