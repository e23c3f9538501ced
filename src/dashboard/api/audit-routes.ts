import { sendJson } from '../http/respond.js';
import type { Route } from '../http/router.js';
import type { ConsoleContext } from './context.js';
import { intOf } from './query.js';

/** The audit log, newest first. */
export function auditRoutes(ctx: ConsoleContext): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/audit',
      async handle({ res, query }) {
        sendJson(res, 200, {
          entries: await ctx.backend.audit.list(intOf(query.get('limit'), 200, 1, 10_000)),
        });
      },
    },
  ];
}
