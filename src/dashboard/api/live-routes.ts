import type { FeedUpdate } from '../feed.js';
import { EventStream } from '../http/event-stream.js';
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
        // At most liveBufferBytes wait in memory for a client that stops reading; then it is cut. Its
        // address is taken now: a socket that was reset has none.
        const remoteAddress = req.socket.remoteAddress;
        const stream = new EventStream(res, ctx.feed.liveBufferBytes, ctx.now, (overflow) =>
          ctx.feed.clientDropped(overflow, remoteAddress),
        );
        stream.write('retry: 2000\n\n');
        const send = (update: FeedUpdate) => {
          const [text, bytes] = messageOf(update);
          stream.write(text, bytes);
        };
        const unsubscribe = ctx.feed.subscribe(send);
        const keepalive = setInterval(() => stream.write(': keepalive\n\n'), KEEPALIVE_MS);
        keepalive.unref();
        res.on('close', () => {
          clearInterval(keepalive);
          unsubscribe();
        });
        const first = await ctx.feed.current().catch(() => undefined);
        if (first) send({ snapshot: first });
      },
    },
  ];
}

/**
 * Each update as its event text and byte length, made once however many clients it goes to (a snapshot
 * is the same object for every subscriber).
 */
const messages = new WeakMap<object, [string, number]>();

function messageOf(update: FeedUpdate): [string, number] {
  const key = 'snapshot' in update ? update.snapshot : update;
  let message = messages.get(key);
  if (!message) {
    const text =
      'snapshot' in update
        ? `event: overview\ndata: ${JSON.stringify(update.snapshot)}\n\n`
        : `event: feed-error\ndata: ${JSON.stringify(update)}\n\n`;
    message = [text, Buffer.byteLength(text)];
    messages.set(key, message);
  }
  return message;
}
