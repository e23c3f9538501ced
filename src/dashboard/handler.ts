import type { IncomingMessage, ServerResponse } from 'node:http';
import { replayJobId } from '../bullmq/dead-letter-ids.js';
import type { EventBus } from '../common/events.js';
import { checkOptionNames, type OptionNames } from '../common/option-names.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import { replayQueueByEngine } from '../runtime/replay/by-engine.js';
import type { ReplayQueue } from '../runtime/replay/replay-queue.js';
import { ReplayRunner } from '../runtime/replay/replay-runner.js';
import type { Fleet } from '../status/fleet.js';
import { auditRoutes } from './api/audit-routes.js';
import { breakerRoutes } from './api/breaker-routes.js';
import type { ConsoleContext } from './api/context.js';
import { deadLetterRoutes } from './api/dead-letter-routes.js';
import { limitRoutes } from './api/limit-routes.js';
import { liveRoutes } from './api/live-routes.js';
import { replayRoutes } from './api/replay-routes.js';
import { consoleBackendOf } from './backend.js';
import { type DashboardEvents, OverviewFeed } from './feed.js';
import { ConsoleAccess, SESSION_COOKIE, SESSION_MS } from './http/access.js';
import { Assets } from './http/assets.js';
import { forwardedHostOf, HostGate } from './http/hosts.js';
import { readSignIn, sendError, sendJson } from './http/respond.js';
import { Router } from './http/router.js';
import { ActionGuard, fetchSiteRefusal, originRefusal, SECURITY_HEADERS } from './http/security.js';
import { consoleHealthGate } from './replay-gate.js';
import {
  type AmqpConnectionLike,
  amqpReplayQueues,
  bullmqReplayQueues,
  type ReplayQueues,
} from './replay-queues.js';

/**
 * Options of {@link createDashboard}.
 *
 * @example
 * const options: DashboardOptions = { fleet, basePath: '/ops/stormguard', token: process.env.STORMGUARD_DASHBOARD_TOKEN };
 */
export interface DashboardOptions {
  /**
   * The fleet's stores: `redisFleet` (`stormguard/redis`), `postgresFleet` (`stormguard/postgres`),
   * `memoryFleet`, or your own. The console never closes it: it is yours.
   */
  fleet: Fleet;
  /**
   * The queue replayed jobs go back to, by name. Default: BullMQ queues on the fleet's own connection
   * (on Redis its client, with `bullPrefix`; on PostgreSQL BullMQ 6's PostgreSQL backend on `queueUrl`,
   * else the connection string the fleet was built from), opened on first use and closed by `close()`.
   */
  replayQueue?: (queue: string) => ReplayQueue;
  /** BullMQ's key prefix of the queues replayed jobs go back to, on Redis. Default `bull`. */
  bullPrefix?: string;
  /**
   * RabbitMQ, for the dead letters a RabbitMQ consumer filed (or an import took): an AMQP URL the console
   * connects to when a replay needs it, or an open amqplib connection (yours to close). Each record goes
   * back through the engine that filed it; without this, such records are refused (they stay filed).
   * Ignored when `replayQueue` is given. Default: none.
   */
  amqp?: string | AmqpConnectionLike;
  /**
   * On PostgreSQL, the connection string of BullMQ 6's PostgreSQL backend replayed jobs go back through.
   * Default: the fleet's connection string, when it was built from one. Without either (or on BullMQ 5)
   * the console reads everything and refuses replays, saying so.
   */
  queueUrl?: string;
  /**
   * The path the console is mounted under, without a trailing slash (`/ops/stormguard`). Default `''`
   * (the root). Requests outside it go to `next` (or get a 404 without one).
   */
  basePath?: string;
  /**
   * The console's token. With one, every request but the sign-in page needs a session: the page posts the
   * token once and gets an HttpOnly, SameSite=Strict cookie (scripts may send `Authorization: Bearer
   * <token>` instead), and actions also pass a CSRF check. Without one the console is read-only: anyone
   * the Host check lets through reads it, and every action is refused.
   */
  token?: string;
  /**
   * The names the console answers for besides the loopback ones (`localhost`, `127.0.0.1`, `[::1]`): the
   * name users open (`console.example.com`, or `console.example.com:8443` for that port only). Requests
   * for any other `Host` get a 403, so a page on another site cannot read the console by pointing its own
   * name at this machine. Required when the console is reached over the network or through a proxy
   * (without it, such requests are refused, saying so). Default: none.
   */
  allowedHosts?: readonly string[];
  /** Who made a request, for the audit log (your app's user). Default: "anonymous". */
  identify?: (req: IncomingMessage) => string | undefined;
  /** How often the overview is read and pushed to every open page, ms. Default 2 000. */
  updateIntervalMs?: number;
  /**
   * What may wait in the console's memory for one live page (the overview's Server-Sent Events) that
   * reads slower than updates come, bytes: past it the page is disconnected (a `live-client-dropped`
   * event; a browser that is still there reconnects by itself). A single update larger than this still
   * goes out. Default 1 048 576 (1 MiB).
   */
  liveBufferBytes?: number;
  /** Where "now" comes from (age filters). Default `Date.now`. */
  now?: () => number;
}

/**
 * A request handler `(req, res, next?)` serving the console, with `close()` to stop its live updates.
 * It answers every request under its base path and passes the rest to `next`.
 */
export interface DashboardHandler {
  (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void): void;
  /** Stops the overview's polling and replays, and closes the queues it opened (never the fleet). */
  close(): Promise<void>;
  /** The console's events: `live-client-dropped` when a live page that stopped reading is disconnected. */
  readonly events: EventBus<DashboardEvents>;
}

const OPTION_NAMES = {
  fleet: true,
  replayQueue: true,
  bullPrefix: true,
  amqp: true,
  queueUrl: true,
  basePath: true,
  token: true,
  allowedHosts: true,
  identify: true,
  updateIntervalMs: true,
  liveBufferBytes: true,
  now: true,
} as const satisfies OptionNames<DashboardOptions>;

/** The CLI's flag names, given to the handler. */
const OPTION_ALIASES: Readonly<Record<string, string>> = {
  allowedHost: 'the names the console answers for are `allowedHosts` (a list)',
  tokenFile: 'read the file and give its content as `token`',
  redis: 'give `fleet: redisFleet({ redis })` (stormguard/redis)',
  store: 'give `fleet` (redisFleet from stormguard/redis, postgresFleet from stormguard/postgres)',
  backend: 'give `fleet` (redisFleet from stormguard/redis, postgresFleet from stormguard/postgres)',
};

/**
 * The operator console as one request handler, mountable in node:http, Express, Fastify or Hono (see
 * docs/console.md). It serves the front end (built into the package: no CDN), its JSON API and live
 * updates over Server-Sent Events.
 *
 * @example
 * import { createServer } from 'node:http';
 * import { Redis } from 'ioredis';
 * import { createDashboard } from 'stormguard/dashboard';
 * import { redisFleet } from 'stormguard/redis';
 *
 * const console = createDashboard({ fleet: redisFleet({ redis: new Redis() }), basePath: '/console' });
 * createServer(console).listen(3000, '127.0.0.1');
 */
export function createDashboard(options: DashboardOptions): DashboardHandler {
  checkOptionNames('createDashboard', options, OPTION_NAMES, OPTION_ALIASES);
  const basePath = normaliseBase(options.basePath ?? '');
  const now = options.now ?? Date.now;
  if (options.token !== undefined && (typeof options.token !== 'string' || options.token === ''))
    throw new InvalidInputError('dashboard: token must be a non-empty string (or left out: read-only)');
  const hosts = new HostGate(options.allowedHosts ?? [], 'allowedHosts');
  const access = new ConsoleAccess(options.token, now);
  const guard = new ActionGuard(access.required);
  const cookiePath = basePath || '/';
  if (typeof options.fleet !== 'object' || options.fleet === null)
    throw new InvalidInputError(
      'dashboard: fleet is required: redisFleet({ redis }) from stormguard/redis, postgresFleet({ pool }) from stormguard/postgres',
    );
  const queues = options.replayQueue
    ? undefined
    : bullmqReplayQueues(options.fleet, {
        ...(options.bullPrefix === undefined ? {} : { bullPrefix: options.bullPrefix }),
        ...(options.queueUrl === undefined ? {} : { queueUrl: options.queueUrl }),
      });
  const amqpQueues = options.replayQueue || !options.amqp ? undefined : amqpReplayQueues(options.amqp);
  // Each record goes back through the engine that filed it: a RabbitMQ message's kept bytes never become
  // a BullMQ job that nobody consumes.
  const defaultReplayQueue = (queue: string) =>
    replayQueueByEngine(
      {
        bullmq: () => (queues as ReplayQueues).open(queue),
        ...(amqpQueues ? { amqp: () => amqpQueues.open(queue) } : {}),
      },
      (engine) =>
        engine === 'amqp'
          ? 'start the console with --amqp <url> (createDashboard({ amqp })) to replay it to RabbitMQ'
          : 'this console replays to RabbitMQ only',
      (record) => replayJobId(record.jobId, record.replays + 1, record.id),
    );
  const backend = consoleBackendOf(options.fleet, options.replayQueue ?? defaultReplayQueue);
  const feed = new OverviewFeed(backend, options.updateIntervalMs ?? 2_000, now, options.liveBufferBytes);
  const ctx: ConsoleContext = {
    backend,
    feed,
    guard,
    now,
    actorOf: (req) => options.identify?.(req) || 'anonymous',
    audit: async (req, entry) => {
      await backend.audit.append({ by: ctx.actorOf(req), ...entry });
    },
  };
  // Bulk replays run on the server, on the same runs any process can run: this console goes on with
  // every run started and not finished once nobody holds it (a console that stopped or crashed).
  const runner = new ReplayRunner({
    store: backend.deadLetters,
    runs: backend.runs,
    jobs: (queue) => backend.replayQueue(queue),
    audit: backend.audit,
    whenHealthy: consoleHealthGate(backend),
  });
  runner.watch();
  const router = new Router([
    ...liveRoutes(ctx, basePath),
    ...deadLetterRoutes(ctx),
    ...breakerRoutes(ctx),
    ...limitRoutes(ctx),
    ...replayRoutes(ctx, runner),
    ...auditRoutes(ctx),
  ]);
  let assets: Assets | undefined;

  const handler = ((req, res, next) => {
    let url: URL;
    try {
      url = new URL((req as { originalUrl?: string }).originalUrl ?? req.url ?? '/', 'http://console');
    } catch {
      sendJson(res, 400, { error: 'the request target is not a path' });
      return;
    }
    // Express says where it mounted the handler: a basePath outside it could never be served there.
    const mountedAt = (req as { baseUrl?: unknown }).baseUrl;
    if (typeof mountedAt === 'string' && mountedAt !== '' && !isUnder(basePath, mountedAt)) {
      sendJson(res, 500, {
        error: `the console is mounted at "${mountedAt}" but its basePath is "${basePath}": pass basePath: "${mountedAt}" to createDashboard`,
      });
      return;
    }
    if (!isUnder(url.pathname, basePath)) {
      if (next) next();
      else sendJson(res, 404, { error: `not found: ${url.pathname}` });
      return;
    }
    // Before anything is read: the Host (DNS rebinding), the Origin (another site's page), and a token
    // in the address (it would stay in history, logs and Referer headers).
    const refusal =
      hosts.check(req) ??
      originRefusal(req, forwardedHostOf(req) ?? req.headers.host) ??
      (url.searchParams.has('token')
        ? {
            status: 400 as const,
            message:
              "the console never takes its token in the address (it would stay in history and logs): sign in on the console's page, or send Authorization: Bearer <token>",
          }
        : undefined);
    if (refusal) {
      sendJson(res, refusal.status, { error: refusal.message });
      return;
    }
    const path = url.pathname.slice(basePath.length);
    serve(req, res, path, url.searchParams).catch((error: unknown) => sendError(res, error));
  }) as DashboardHandler;

  async function serve(req: IncomingMessage, res: ServerResponse, path: string, query: URLSearchParams) {
    if (path === '') {
      res.writeHead(308, { ...SECURITY_HEADERS, Location: `${basePath}/` });
      res.end();
      return;
    }
    if (path === '/login' || path === '/logout') {
      await session(req, res, path);
      return;
    }
    if (!path.startsWith('/api/')) {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendJson(res, 405, { error: `${req.method} is not allowed here` });
        return;
      }
      assets ??= new Assets();
      // The front end's files hold no data: the sign-in page needs its stylesheet.
      if (path.startsWith('/assets/')) {
        if (!assets.serve(path.slice('/assets/'.length), res))
          sendJson(res, 404, { error: `not found: ${path}` });
      } else if (path !== '/') sendJson(res, 404, { error: `not found: ${path}` });
      else if (!access.allows(req)) assets.signIn(basePath, res);
      else assets.shell(basePath, guard.writable, res);
      return;
    }
    if (!access.allows(req)) {
      sendJson(res, 401, {
        error: `this console needs its token: sign in at ${basePath}/ (or send Authorization: Bearer <token>)`,
      });
      return;
    }
    const crossSite = fetchSiteRefusal(req);
    if (crossSite) {
      sendJson(res, crossSite.status, { error: crossSite.message });
      return;
    }
    const found = router.match(req.method ?? 'GET', path);
    if ('allowed' in found) {
      if (found.allowed.length > 0) {
        res.setHeader('Allow', found.allowed.join(', '));
        sendJson(res, 405, { error: `${req.method} ${path}: use ${found.allowed.join(' or ')}` });
      } else sendJson(res, 404, { error: `no such API: ${path}` });
      return;
    }
    if (found.route.action) {
      const refusal = guard.check(req);
      if (refusal) {
        sendJson(res, refusal.status, { error: refusal.message });
        return;
      }
    }
    await found.route.handle({ req, res, params: found.params, query });
  }

  /** `POST login` exchanges the token for a session cookie; `POST logout` ends it. */
  async function session(req: IncomingMessage, res: ServerResponse, path: string) {
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST');
      sendJson(res, 405, { error: `${req.method} ${path}: use POST (the sign-in page is ${basePath}/)` });
      return;
    }
    const secure = isHttps(req) ? '; Secure' : '';
    if (path === '/logout') {
      res.writeHead(303, {
        ...SECURITY_HEADERS,
        'Set-Cookie': `${SESSION_COOKIE}=; Path=${cookiePath}; HttpOnly; SameSite=Strict; Max-Age=0${secure}`,
        Location: `${basePath}/`,
      });
      res.end();
      return;
    }
    if (!access.required) {
      sendJson(res, 404, { error: 'this console has no token to sign in with: it is read-only' });
      return;
    }
    const given = await readSignIn(req);
    if (given === undefined || !access.tokenMatches(given)) {
      assets ??= new Assets();
      assets.signIn(
        basePath,
        res,
        given === undefined ? 'Give the token.' : "That is not this console's token.",
      );
      return;
    }
    res.writeHead(303, {
      ...SECURITY_HEADERS,
      'Set-Cookie': `${SESSION_COOKIE}=${access.issue()}; Path=${cookiePath}; HttpOnly; SameSite=Strict; Max-Age=${SESSION_MS / 1000}${secure}`,
      'Cache-Control': 'no-store',
      Location: `${basePath}/`,
    });
    res.end();
  }

  (handler as { events: DashboardHandler['events'] }).events = feed.events;
  handler.close = async () => {
    feed.close();
    await runner.close();
    await queues?.close();
    await amqpQueues?.close();
  };
  return handler;
}

/** Whether `path` is `base` or below it. */
function isUnder(path: string, base: string): boolean {
  return path === base || path.startsWith(`${base}/`);
}

function normaliseBase(basePath: string): string {
  const trimmed = basePath.replace(/\/+$/, '');
  if (trimmed !== '' && !trimmed.startsWith('/'))
    throw new InvalidInputError(`dashboard: basePath must start with "/" (got "${basePath}")`);
  if (/[?#\s]/.test(trimmed))
    throw new InvalidInputError(`dashboard: basePath must be a plain path (got "${basePath}")`);
  return trimmed;
}

/** Whether the browser reached the console over HTTPS (directly, or through a proxy that says so). */
function isHttps(req: IncomingMessage): boolean {
  return (
    (req.socket as { encrypted?: boolean }).encrypted === true || req.headers['x-forwarded-proto'] === 'https'
  );
}
