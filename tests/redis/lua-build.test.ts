import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { buildSync } from 'esbuild';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LuaIncludeError, resolveLua } from '../../src/redis/lua-includes.js';
import { defineScript, luaSource } from '../../src/redis/scripts.js';
import { ROOT } from '../helpers/cli.js';
import { TestRedis } from '../helpers/redis-server.js';

const run = promisify(execFile);
const LUA = join(ROOT, 'src/redis/lua');
const SCRIPTS = readdirSync(LUA)
  .filter((name) => name.endsWith('.lua'))
  .sort();
const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');

let work: string;

/**
 * A project root in `work` holding `files` as its src/redis/lua/ and the resolver compiled to
 * dist/redis/lua-includes.js (as tsc leaves it before copy-assets runs), so the build step runs on it
 * without touching the repository's own dist/.
 */
function project(name: string, files: Record<string, string> | 'shipped'): string {
  const root = join(work, name);
  const lua = join(root, 'src/redis/lua');
  if (files === 'shipped') cpSync(LUA, lua, { recursive: true });
  else
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(dirname(join(lua, file)), { recursive: true });
      writeFileSync(join(lua, file), text);
    }
  buildSync({
    entryPoints: [join(ROOT, 'src/redis/lua-includes.ts')],
    outfile: join(root, 'dist/redis/lua-includes.js'),
    format: 'esm',
    platform: 'node',
    logLevel: 'silent',
  });
  return root;
}

/** Runs the build's Lua step in `root`, as copy-assets does; never throws. */
async function buildLua(root: string): Promise<{ code: number; stderr: string }> {
  try {
    const { stderr } = await run(process.execPath, [join(ROOT, 'scripts/build-lua.mjs')], { cwd: root });
    return { code: 0, stderr };
  } catch (error) {
    const e = error as { code?: number; stderr?: string };
    return { code: e.code ?? 1, stderr: e.stderr ?? '' };
  }
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'stormguard-lua-'));
});
afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

describe('Lua includes', () => {
  it.each(SCRIPTS)('%s resolves, keeping its contract header first', (file) => {
    const source = luaSource(file);
    expect(source.startsWith('--[[\n')).toBe(true);
    expect(source).toMatch(/KEYS\[1\]/);
    expect(source).toMatch(/Returns/);
    expect(source).not.toMatch(/^--#include/m);
    expect(source).not.toMatch(/^--@include/m);
  });

  it('the dead-letter listing and count share one index walk', () => {
    for (const file of ['dlq-list-7.lua', 'dlq-count-5.lua']) {
      expect(readFileSync(join(LUA, file), 'utf8')).toContain('--#include "includes/index-walk.lua"\n');
      const source = luaSource(file);
      expect(source.match(/local function dlWalkPlan\(/g)).toHaveLength(1);
      // index-walk.lua includes dead-letters.lua itself: its functions are there once either way.
      expect(source.match(/local function dlCountBefore\(/g)).toHaveLength(1);
      expect(source).not.toContain("redis.call('ZCARD', KEYS[i])");
    }
  });

  it('resolves nested includes in place, each file once, paths relative to the scripts folder', () => {
    const root = project('nested', {
      'main.lua': '-- main\n--#include "lib/a.lua"\n--#include "lib/b.lua"\nreturn a() + b()\n',
      'lib/a.lua': '--#include "lib/base.lua"\nlocal function a() return base end\n',
      'lib/b.lua': '--#include "lib/base.lua"\nlocal function b() return base end\n',
      'lib/base.lua': 'local base = 1\n',
    });
    expect(resolveLua(join(root, 'src/redis/lua'), 'main.lua')).toBe(
      '-- main\nlocal base = 1\nlocal function a() return base end\n' +
        '-- lib/base.lua: included above\nlocal function b() return base end\nreturn a() + b()\n',
    );
  });

  it('an include cycle, a missing include or a malformed directive fails the build, naming file and line', async () => {
    const cycle = project('cycle', {
      'main.lua': 'local x = 1\n--#include "lib/a.lua"\n',
      'lib/a.lua': '--#include "lib/b.lua"\n',
      'lib/b.lua': '-- b\n--#include "lib/a.lua"\n',
    });
    const failed = await buildLua(cycle);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain(
      'lib/b.lua:2: include cycle "main.lua" → "lib/a.lua" → "lib/b.lua" → "lib/a.lua"',
    );
    expect(existsSync(join(cycle, 'dist/redis/lua/main.lua'))).toBe(false);

    const missing = project('missing', {
      'main.lua': '--#include "lib/a.lua"\n',
      'lib/a.lua': '\n\n--#include "lib/gone.lua"\n',
    });
    const gone = await buildLua(missing);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('lib/a.lua:3: include "lib/gone.lua" not found');
    expect(gone.stderr).toContain('(included through "main.lua")');

    const dir = join(project('malformed', { 'main.lua': '--#include lib/a.lua\n' }), 'src/redis/lua');
    expect(() => resolveLua(dir, 'main.lua')).toThrow(LuaIncludeError);
    expect(() => resolveLua(dir, 'main.lua')).toThrow('main.lua:1: malformed include');
    expect(() => resolveLua(dir, '../outside.lua')).toThrow(LuaIncludeError);
  });

  it('the build writes each script resolved, the same source the stores resolve from src', async () => {
    const root = project('shipped', 'shipped');
    expect(await buildLua(root)).toEqual({ code: 0, stderr: '' });
    const dist = join(root, 'dist/redis/lua');
    expect(readdirSync(dist).sort()).toEqual(SCRIPTS);
    for (const file of SCRIPTS) {
      const built = readFileSync(join(dist, file), 'utf8');
      expect(built, file).toBe(luaSource(file));
      // What the stores do when running from dist: a resolved script resolves to itself.
      expect(resolveLua(dist, file), file).toBe(built);
    }
  });
});

describe('Lua scripts on Redis', () => {
  let server: TestRedis;
  let redis: Redis;
  beforeAll(async () => {
    server = await TestRedis.start();
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    redis.disconnect();
    await server.stop();
  });

  it('are registered under the SHA1 of their resolved source, and load again after a cache flush', async () => {
    const root = project('registered', 'shipped');
    expect((await buildLua(root)).code).toBe(0);
    const cases = [
      { file: 'audit-list-2.lua', keys: ['{t:g}:audit', '{t:g}:audit-seq'], args: [10, ''], reply: ['0'] },
      {
        file: 'dlq-count-5.lua',
        keys: ['all', 'r', 'd', 'n', 'ix'].map((k) => `{t:q:mail}:dl:${k}`),
        args: ['-inf', '+inf', '110', '', '', 100],
        reply: [0, ''],
      },
    ];
    for (const { file, keys, args, reply } of cases) {
      const sha = sha1(readFileSync(join(root, 'dist/redis/lua', file), 'utf8'));
      const call = defineScript(redis, {
        command: `test${file.replace(/\W/g, '')}`,
        file,
        numberOfKeys: keys.length,
      });
      expect(await redis.script('EXISTS', sha)).toEqual([0]);
      expect(await call(keys, args)).toEqual(reply);
      expect(await redis.script('EXISTS', sha)).toEqual([1]);
      await redis.script('FLUSH');
      expect(await call(keys, args)).toEqual(reply);
      expect(await redis.script('EXISTS', sha)).toEqual([1]);
    }
  });
});
