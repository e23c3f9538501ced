import { parseDuration } from '../../common/duration.js';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import {
  changeLimits,
  checkLimitChange,
  LIMIT_ACTIONS,
  type LimitAction,
  type LimitChangeRequest,
} from '../../status/limit-actions.js';
import { limitStatusOf } from '../../status/limits.js';
import { readFleetStatus } from '../../status/read-fleet-status.js';
import { readJson, sendJson } from '../http/respond.js';
import type { Route } from '../http/router.js';
import type { ConsoleContext } from './context.js';

/**
 * Each limited dependency's limits, and an operator's change of them (set, pause, resume, reset) with a
 * reason and an optional expiry, audited as `limits.<action>` with the console's actor.
 */
export function limitRoutes(ctx: ConsoleContext): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/limits',
      async handle({ res }) {
        const status = await readFleetStatus({ limits: ctx.backend.limits }, { throwOnError: true });
        sendJson(res, 200, {
          limits: status.dependencies.flatMap((d) =>
            d.limits ? [{ dependency: d.dependency, ...d.limits }] : [],
          ),
          actions: LIMIT_ACTIONS,
        });
      },
    },
    {
      method: 'POST',
      path: '/api/limits/:dependency',
      action: true,
      async handle({ req, res, params }) {
        const dependency = params.dependency ?? '';
        const body = await readJson(req);
        const action = body.action as LimitAction;
        // checkLimitChange checks the action, the reason (required) and each field; changeLimits applies
        // the change, then writes the audit entry.
        const request = checkLimitChange(action, requestOf(body, ctx.actorOf(req)));
        const result = await changeLimits(
          { store: ctx.backend.limits, audit: ctx.backend.audit },
          dependency,
          action,
          request,
        );
        ctx.feed.refresh().catch(() => {});
        sendJson(res, 200, {
          message: `${dependency}: ${action} applied`,
          limits: { dependency, ...limitStatusOf(result.state) },
        });
      },
    },
  ];
}

/** The change a form posts: numbers as numbers or text, the expiry as a duration (`30m`) or nothing. */
function requestOf(body: Record<string, unknown>, by: string): { [K in keyof LimitChangeRequest]?: unknown } {
  const request: { [K in keyof LimitChangeRequest]?: unknown } = { reason: body.reason, by };
  for (const field of ['maxInFlight', 'maxRatePerSecond'] as const) {
    const value = body[field];
    if (value === undefined || value === null || value === '') continue;
    request[field] = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  }
  const expires = body.expires;
  if (expires !== undefined && expires !== null && expires !== '') {
    if (typeof expires !== 'string')
      throw new InvalidInputError('expires: give the expiry as a duration such as "30m" or "4h"');
    request.expiresInMs = parseDuration(expires, 'expires');
  }
  return request;
}
