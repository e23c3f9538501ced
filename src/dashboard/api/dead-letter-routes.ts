import { isMalformedDeadLetter } from '../../runtime/dead-letter-record.js';
import { searchDeadLetters } from '../../runtime/dead-letter-search.js';
import { HttpError, sendJson } from '../http/respond.js';
import type { Route } from '../http/router.js';
import type { ConsoleContext } from './context.js';
import { filterOf, indexedFields, intOf } from './query.js';

/** Records a text search looks at per request before it answers with a cursor. */
const SEARCH_BUDGET = 10_000;

/** The dead-letter pages: queues, a filtered page, text search, one record, and deleting it. */
export function deadLetterRoutes(ctx: ConsoleContext): Route[] {
  const store = ctx.backend.deadLetters;
  const known = async (queue: string) => {
    const summary = await store.queue(queue);
    if (!summary) throw new HttpError(404, `no dead-letter queue "${queue}" is registered`);
    return summary;
  };
  return [
    {
      method: 'GET',
      path: '/api/queues',
      async handle({ res }) {
        sendJson(res, 200, { queues: await store.queues() });
      },
    },
    {
      method: 'GET',
      path: '/api/queues/:queue/records',
      async handle({ res, params, query }) {
        const queue = params.queue ?? '';
        await known(queue);
        const filter = filterOf((k) => query.get(k), ctx.now());
        const limit = intOf(query.get('limit'), 50, 1, 500);
        const cursor = query.get('cursor') || undefined;
        const newestFirst = query.get('order') !== 'oldest';
        const [page, matching] = await Promise.all([
          readPage(queue, limit, { ...filter, newestFirst, ...(cursor ? { cursor } : {}) }),
          // With two or more indexed fields a count walks an index: the page says "more" instead.
          indexedFields(filter) <= 1 ? store.count(queue, filter) : Promise.resolve(undefined),
        ]);
        sendJson(res, 200, { ...page, ...(matching === undefined ? {} : { matching }) });
      },
    },
    {
      method: 'GET',
      path: '/api/queues/:queue/search',
      async handle({ res, params, query }) {
        const queue = params.queue ?? '';
        await known(queue);
        const text = query.get('q') ?? '';
        if (text.trim() === '') throw new HttpError(400, 'search: q (the text to look for) is empty');
        const cursor = query.get('cursor') || undefined;
        // The stores' own bounded, resumable search: `scanned` counts over the whole search, cursor included.
        const chunk = await searchDeadLetters(store, queue, {
          ...filterOf((k) => query.get(k), ctx.now()),
          text,
          newestFirst: true,
          scanLimit: intOf(query.get('budget'), SEARCH_BUDGET, 1, 100_000),
          limit: intOf(query.get('limit'), 50, 1, 500),
          ...(cursor ? { cursor } : {}),
        });
        sendJson(res, 200, chunk);
      },
    },
    {
      method: 'GET',
      path: '/api/queues/:queue/records/:id',
      async handle({ res, params }) {
        const record = await store.get(params.queue ?? '', params.id ?? '');
        if (!record)
          throw new HttpError(404, `no record ${params.id} in the dead letters of "${params.queue}"`);
        sendJson(res, 200, { record, malformed: isMalformedDeadLetter(record) });
      },
    },
    {
      method: 'POST',
      path: '/api/queues/:queue/records/:id/delete',
      action: true,
      async handle({ req, res, params }) {
        const queue = params.queue ?? '';
        const id = params.id ?? '';
        const removed = await store.remove(queue, id);
        await ctx.audit(req, {
          action: 'dead-letter.delete',
          target: `${queue}/${id}`,
          detail: { removed },
        });
        ctx.feed.refresh().catch(() => {});
        sendJson(res, removed ? 200 : 404, {
          message: removed ? `record ${id} deleted` : `record ${id} was already gone`,
        });
      },
    },
  ];

  /**
   * One page of `limit` entries. A store page may hold fewer and still have a `next` (it bounds its own
   * work), so pages are read on until the page is full or the listing ends.
   */
  async function readPage(
    queue: string,
    limit: number,
    request: Omit<Parameters<typeof store.list>[1], 'limit'>,
  ) {
    const out = {
      records: [] as unknown[],
      malformed: [] as unknown[],
      next: undefined as string | undefined,
    };
    let cursor = request.cursor;
    for (let round = 0; round < 20; round++) {
      const page = await store.list(queue, {
        ...request,
        limit: limit - out.records.length - out.malformed.length,
        ...(cursor ? { cursor } : {}),
      });
      out.records.push(...page.records);
      out.malformed.push(...page.malformed);
      out.next = page.next;
      cursor = page.next;
      if (!cursor || out.records.length + out.malformed.length >= limit) break;
    }
    return out;
  }
}
