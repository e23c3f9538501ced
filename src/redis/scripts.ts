import { fileURLToPath } from 'node:url';
import type { Cluster, Redis } from 'ioredis';
import { resolveLua } from './lua-includes.js';

/**
 * The ioredis clients stormguard's Redis stores accept: a single node or a cluster.
 *
 * @example
 * const redis: RedisClient = new Redis(process.env.REDIS_URL);
 */
export type RedisClient = Redis | Cluster;

/**
 * Whether `redis` is an ioredis `Cluster` client.
 *
 * @example
 * isCluster(new Cluster([{ host: '127.0.0.1', port: 7000 }])); // true
 */
export function isCluster(redis: RedisClient): redis is Cluster {
  return (redis as Cluster).isCluster === true;
}

/**
 * A Lua script kept as a source file in `src/redis/lua/<file>` (named `<name>-<numberOfKeys>.lua`).
 *
 * @example
 * const spec: ScriptSpec = { command: 'stormguardBudgetReadV1', file: 'budget-read-1.lua', numberOfKeys: 1 };
 */
export interface ScriptSpec {
  /** The command name it is registered under on the client; carries a version so upgrades never clash. */
  command: string;
  file: string;
  numberOfKeys: number;
  readOnly?: boolean;
}

// The scripts' folder: src/redis/lua/ with its includes when running from the sources, dist/redis/lua/
// with each script resolved by the build (and no includes left to resolve) when running the package.
const LUA_DIR = fileURLToPath(new URL('./lua/', import.meta.url));
const sources = new Map<string, string>();

/**
 * The script's source with its `--#include "includes/<name>.lua"` lines resolved ({@link resolveLua}): the
 * text registered on Redis, whose SHA1 is the script's EVALSHA name. The same from `src/` and from the
 * built `dist/`. Read once per process.
 *
 * @example
 * luaSource('budget-spend-1.lua').includes('local function budgetRead'); // true
 */
export function luaSource(file: string): string {
  let source = sources.get(file);
  if (source === undefined) {
    source = resolveLua(LUA_DIR, file);
    sources.set(file, source);
  }
  return source;
}

/**
 * Registers `spec` on `redis` with ioredis `defineCommand` unless the client already has it, and returns a
 * caller for it. ioredis names the script by the SHA1 of {@link luaSource} and sends EVALSHA, falling back
 * to EVAL (which loads it) once after a NOSCRIPT reply, as after a script cache flush or on a new node.
 *
 * @example
 * const spend = defineScript(redis, { command: 'stormguardBudgetSpendV1', file: 'budget-spend-1.lua', numberOfKeys: 1 });
 * const reply = await spend(['{stormguard:d:search}:budget'], [6000, 10, 200000, 10, 0, 0, 120000, '']);
 */
export function defineScript(
  redis: RedisClient,
  spec: ScriptSpec,
): (keys: readonly string[], args: readonly (string | number)[]) => Promise<unknown> {
  const client = redis as unknown as Record<string, (...args: (string | number)[]) => Promise<unknown>>;
  if (typeof client[spec.command] !== 'function') {
    redis.defineCommand(spec.command, {
      lua: luaSource(spec.file),
      numberOfKeys: spec.numberOfKeys,
      readOnly: spec.readOnly ?? false,
    });
  }
  return (keys, args) =>
    (client[spec.command] as (...a: (string | number)[]) => Promise<unknown>).call(redis, ...keys, ...args);
}
