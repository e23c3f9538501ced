import { sendJson } from '../http/respond.js';
import type { Route } from '../http/router.js';
import type { ConsoleContext } from './context.js';
import { intOf } from './query.js';

/** The audit log, newest first, a page at a time. */
export function auditRoutes(ctx: ConsoleContext): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/audit',
      async handle({ res, query }) {
        const cursor = query.get('cursor') || undefined;
        const limit = intOf(query.get('limit'), 100, 1, 1_000);
        sendJson(res, 200, await ctx.backend.audit.list({ limit, ...(cursor ? { cursor } : {}) }));
      },
    },
  ];
}
