import { isInvalidInputError } from '../../errors/invalid-input-error.js';
import { replayDeadLetters } from '../../runtime/replay/replay.js';
import type { ReplayRunner } from '../../runtime/replay/replay-runner.js';
import { createReplayRun, listReplayRuns, startReplayRun } from '../../runtime/replay/replay-runs.js';
import type { ReplayRun, ReplayRunStore } from '../../runtime/replay-runs.js';
import { HttpError, readJson, sendJson } from '../http/respond.js';
import type { Route } from '../http/router.js';
import type { ConsoleContext } from './context.js';
import { filterOf } from './query.js';

/**
 * Replays: one record from its page, and bulk replays (a preview on a snapshot, then a run on the
 * server, its progress and the records that failed).
 */
export function replayRoutes(ctx: ConsoleContext, runner: ReplayRunner | undefined): Route[] {
  const store = ctx.backend.deadLetters;
  const runs = (): ReplayRunStore => {
    if (!ctx.backend.runs) throw new HttpError(501, 'this console has no store for bulk replays');
    return ctx.backend.runs;
  };
  return [
    {
      method: 'POST',
      path: '/api/queues/:queue/records/:id/replay',
      action: true,
      async handle({ req, res, params }) {
        const queue = params.queue ?? '';
        const id = params.id ?? '';
        const report = await replayDeadLetters(
          { store, queue, jobs: ctx.backend.replayQueue(queue) },
          { ids: [id] },
        );
        const moved = report.moved[0];
        const why = report.failed[0]?.error ?? report.skipped[0]?.why ?? report.malformed[0]?.problem;
        await ctx.audit(req, {
          action: 'dead-letter.replay',
          target: `${queue}/${id}`,
          detail: moved ? { replayJobId: moved.replayJobId } : { notMoved: why ?? 'unknown' },
        });
        ctx.feed.refresh().catch(() => {});
        if (!moved) throw new HttpError(409, `record ${id} was not replayed: ${why ?? 'unknown'}`);
        sendJson(res, 200, { message: `record ${id} replayed as job ${moved.replayJobId}`, moved });
      },
    },
    {
      method: 'POST',
      path: '/api/queues/:queue/replays/preview',
      action: true,
      async handle({ req, res, params }) {
        const queue = params.queue ?? '';
        if (!(await store.queue(queue))) throw new HttpError(404, `no dead-letter queue "${queue}"`);
        const body = await readJson(req);
        const given = (body.filter ?? {}) as Record<string, string>;
        const filter = filterOf((k) => given[k], ctx.now());
        const ratePerSecond = rateOf(body.ratePerSecond);
        // The preview is a run not started: its snapshot is what Start replays.
        const run = await createReplayRun({ store, runs: runs() }, queue, {
          ...filter,
          ...(ratePerSecond ? { ratePerSecond } : {}),
          by: ctx.actorOf(req),
          clock: { now: ctx.now },
        });
        const { total, byReason, byDependency, estimatedMs } = run.preview;
        sendJson(res, 200, {
          snapshotId: run.id,
          total,
          byReason,
          byDependency,
          ...(ratePerSecond ? { ratePerSecond, estimateMs: estimatedMs } : {}),
        });
      },
    },
    {
      method: 'POST',
      path: '/api/queues/:queue/replays',
      action: true,
      async handle({ req, res, params }) {
        const body = await readJson(req);
        const run = await runs().getRun(String(body.snapshotId ?? ''));
        if (!run || run.queue !== params.queue)
          throw new HttpError(
            404,
            `no preview ${String(body.snapshotId)} for queue "${params.queue}": preview first`,
          );
        if (run.startedAtMs !== undefined || run.status !== 'pending')
          throw new HttpError(409, `replay ${run.id} has started already`);
        let started: ReplayRun | undefined;
        try {
          started = await startReplayRun({ runs: runs(), audit: ctx.backend.audit }, run.id, {
            ratePerSecond: rateOf(body.ratePerSecond) ?? null,
            whenHealthy: body.whenHealthy === true,
            by: ctx.actorOf(req),
            clock: { now: ctx.now },
          });
        } catch (error) {
          if (isInvalidInputError(error)) throw new HttpError(409, error.message);
          throw error;
        }
        if (!started) throw new HttpError(404, `no preview ${run.id}`);
        runner?.start(run.id);
        sendJson(res, 200, started);
      },
    },
    {
      method: 'GET',
      path: '/api/replays',
      async handle({ res, query }) {
        const queue = query.get('queue') || undefined;
        const all = ctx.backend.runs ? await listReplayRuns(ctx.backend.runs) : [];
        sendJson(res, 200, {
          runs: all.filter((r) => r.startedAtMs !== undefined && (queue === undefined || r.queue === queue)),
        });
      },
    },
    {
      method: 'GET',
      path: '/api/replays/:id',
      async handle({ res, params }) {
        const run = await runs().getRun(params.id ?? '');
        if (!run) throw new HttpError(404, `no replay ${params.id}`);
        sendJson(res, 200, run);
      },
    },
  ];
}

function rateOf(value: unknown): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const rate = Number(value);
  if (!Number.isFinite(rate) || rate <= 0)
    throw new HttpError(
      400,
      `ratePerSecond: expected a number of jobs per second above 0, got ${String(value)}`,
    );
  return rate;
}
