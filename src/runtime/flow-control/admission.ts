import { decideRefusedAdmission, type SyncDecideContext } from '../../policy/decide.js';
import type { BreakerGate, BudgetGate, Decision } from '../../policy/types.js';
import type { AttemptState } from '../contracts.js';

/**
 * Admission: no attempt after the first reaches a dependency without the budget's grant (and the
 * breaker's). A retry `decide` granted carries its grant in the attempt state (`granted`), and is charged
 * once, then. Every other run of a job that ran before asks first: a deferred job (never granted), a job
 * whose grant a stalled run used up, a job put back by any other path.
 */

/**
 * True when the job must ask the breaker and the budget before it runs: it has an attempt state without a
 * grant, or it stalled since its state was written (the stalled run used the grant up; a first attempt
 * that stalled ran once already). A job on its first run needs none. `stalls` is the queue's count of
 * stalled-job recoveries (BullMQ's `stalledCounter`).
 *
 * @example
 * needsAdmission(undefined, 0); // false: a first attempt
 * needsAdmission({ attempts: 1, deferrals: 0, granted: true }, 0); // false: decide granted it
 * needsAdmission({ attempts: 1, deferrals: 1 }, 0); // true: deferred, never granted
 * needsAdmission({ attempts: 1, deferrals: 0, granted: true }, 1); // true: a stalled run used the grant
 */
export function needsAdmission(state: AttemptState | undefined, stalls: number): boolean {
  if (stalls > (state?.stalls ?? 0)) return true;
  return state !== undefined && state.granted !== true;
}

/**
 * What {@link admit} needs: the decide context of the attempt the job is waiting to make (no error: none
 * happened yet) and the gates.
 *
 * @example
 * const ctx: AdmitContext = { policy, attemptsMade: state.attempts + 1, createdAtMs: job.ref.createdAt,
 *   nowMs: clock.now(), random, dependency: 'search', budget, breaker };
 */
export interface AdmitContext extends Omit<SyncDecideContext, 'error'> {
  breaker?: BreakerGate | undefined;
  budget?: BudgetGate | undefined;
}

/**
 * Asks the breaker, then the budget (decide's order), for a job that {@link needsAdmission}. Resolves
 * `undefined` when the job may run (the budget charged the retry now: this is its one charge), or the
 * decision for a refused job: delayed to the half-open time, deferred again, or dead-lettered, never
 * charging an attempt. A half-open breaker admits: the call's own breaker admission picks the probes.
 * Pure apart from the two gates.
 *
 * @example
 * const refused = await admit({ policy, attemptsMade: 2, createdAtMs, nowMs, random, dependency: 'search', budget });
 * if (refused === undefined) await work(); // granted
 */
export async function admit(ctx: AdmitContext): Promise<Decision | undefined> {
  const decideCtx: SyncDecideContext = { ...ctx, error: undefined };
  if (ctx.breaker) {
    const verdict = await ctx.breaker.check(ctx.dependency);
    if (verdict.state === 'open') return decideRefusedAdmission(decideCtx, { by: 'breaker', verdict });
  }
  if (ctx.budget) {
    const verdict = await ctx.budget.trySpend(ctx.dependency);
    if (!verdict.granted)
      return decideRefusedAdmission(decideCtx, {
        by: 'budget',
        windowMs: verdict.windowMs,
        onExhausted: ctx.budget.onExhausted,
      });
  }
  return undefined;
}
