import { replayDeadLetters } from '../../bullmq/replay.js';
import type { DeadLetterFilter } from '../../runtime/contracts.js';
import { HttpError, readJson, sendJson } from '../http/respond.js';
import type { Route } from '../http/router.js';
import type { ReplayRunner } from '../replay-runner.js';
import type { ReplayRun, ReplayRunStore } from '../replay-runs.js';
import type { ConsoleContext } from './context.js';
import { filterOf } from './query.js';

/** Records read per page while taking a snapshot. */
const PAGE = 500;

/**
 * Replays: one record from its page, and bulk replays (a preview on a snapshot, then a run on the
 * server, its progress and the records that failed).
 */
export function replayRoutes(ctx: ConsoleContext, runner: ReplayRunner): Route[] {
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
        const { ids, byReason, byDependency } = await snapshot(queue, filter);
        const run = await runs().create(
          {
            queue,
            state: 'preview',
            filter,
            total: ids.length,
            byReason,
            byDependency,
            handled: 0,
            moved: 0,
            skipped: 0,
            failed: [],
            whenHealthy: false,
            by: ctx.actorOf(req),
            createdAtMs: ctx.now(),
            ...(ratePerSecond ? { ratePerSecond } : {}),
          },
          ids,
        );
        sendJson(res, 200, {
          snapshotId: run.id,
          total: run.total,
          byReason,
          byDependency,
          ...(ratePerSecond
            ? { ratePerSecond, estimateMs: Math.ceil((ids.length / ratePerSecond) * 1000) }
            : {}),
        });
      },
    },
    {
      method: 'POST',
      path: '/api/queues/:queue/replays',
      action: true,
      async handle({ req, res, params }) {
        const body = await readJson(req);
        const run = await runs().get(String(body.snapshotId ?? ''));
        if (!run || run.queue !== params.queue)
          throw new HttpError(
            404,
            `no preview ${String(body.snapshotId)} for queue "${params.queue}": preview first`,
          );
        if (run.state !== 'preview') throw new HttpError(409, `replay ${run.id} has started already`);
        const ratePerSecond = rateOf(body.ratePerSecond);
        const started: ReplayRun = {
          ...run,
          state: 'running',
          whenHealthy: body.whenHealthy === true,
          startedAtMs: ctx.now(),
          by: ctx.actorOf(req),
        };
        if (ratePerSecond) started.ratePerSecond = ratePerSecond;
        else delete started.ratePerSecond;
        await runs().save(started);
        await ctx.audit(req, {
          action: 'replay.start',
          target: run.queue,
          detail: {
            run: run.id,
            records: run.total,
            filter: run.filter,
            ratePerSecond: ratePerSecond ?? null,
            whenHealthy: started.whenHealthy,
          },
        });
        runner.start(run.id);
        sendJson(res, 200, started);
      },
    },
    {
      method: 'GET',
      path: '/api/replays',
      async handle({ res, query }) {
        const queue = query.get('queue') || undefined;
        const all = ctx.backend.runs ? await ctx.backend.runs.list() : [];
        sendJson(res, 200, {
          runs: all.filter((r) => r.state !== 'preview' && (queue === undefined || r.queue === queue)),
        });
      },
    },
    {
      method: 'GET',
      path: '/api/replays/:id',
      async handle({ res, params }) {
        const run = await runs().get(params.id ?? '');
        if (!run) throw new HttpError(404, `no replay ${params.id}`);
        sendJson(res, 200, run);
      },
    },
  ];

  /** Every record the filter selects now, by id, with the counts the preview shows. */
  async function snapshot(queue: string, filter: DeadLetterFilter) {
    const ids: string[] = [];
    const byReason: Record<string, number> = {};
    const byDependency: Record<string, number> = {};
    let cursor: string | undefined;
    do {
      const page = await store.list(queue, { ...filter, limit: PAGE, ...(cursor ? { cursor } : {}) });
      for (const r of page.records) {
        ids.push(r.id);
        byReason[r.reason] = (byReason[r.reason] ?? 0) + 1;
        byDependency[r.dependency] = (byDependency[r.dependency] ?? 0) + 1;
      }
      cursor = page.next;
    } while (cursor);
    return { ids, byReason, byDependency };
  }
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
