import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { parsePostgresUrl } from '../../src/cli/postgres-url.js';
import { run } from '../../src/cli/program.js';
import { parseRedisTarget } from '../../src/cli/redis-target.js';
import { freePort } from '../helpers/redis-server.js';

// Every password below starts with SECRET and ends with TOKEN: neither word may reach the terminal,
// whatever the characters in between do to a URL parser.

/** Runs the CLI in this process, as `stormguard …args` would, with REDIS_URL set to `redisUrl` if given. */
async function stormguard(args: string[], redisUrl?: string) {
  let stdout = '';
  let stderr = '';
  const saved = process.env.REDIS_URL;
  if (redisUrl === undefined) delete process.env.REDIS_URL;
  else process.env.REDIS_URL = redisUrl;
  try {
    const code = await run(args, {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
    });
    return { code, stdout, stderr };
  } finally {
    if (saved === undefined) delete process.env.REDIS_URL;
    else process.env.REDIS_URL = saved;
  }
}

function expectNoSecret(text: string): void {
  expect(text).not.toMatch(/SECRET|TOKEN/);
}

afterEach(() => {
  expect(process.env.REDIS_URL).toBe(undefined);
});

describe('the CLI never prints a password', () => {
  const passwords = ['SECRET#TOKEN', 'SECRET?TOKEN', 'SECRET/TOKEN', 'SECRET#a?b/TOKEN', 'SECRET,TOKEN'];

  it.each(passwords)('--redis with the password %s: exit 2, the password masked', async (password) => {
    const result = await stormguard([
      'budget',
      'status',
      '--redis',
      `redis://app:${password}@127.0.0.1:6390/0`,
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^stormguard: --redis: "redis:\/\/app:\*\*\*@127\.0\.0\.1:6390\/0"/);
    expectNoSecret(result.stderr + result.stdout);
  });

  it.each(passwords)('REDIS_URL with the password %s: exit 2, the password masked', async (password) => {
    const result = await stormguard(['breaker', 'status'], `redis://:${password}@127.0.0.1:6390`);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('redis://:***@127.0.0.1:6390');
    expectNoSecret(result.stderr + result.stdout);
  });

  it.each(passwords.slice(0, -1))(
    '--postgres with the password %s: exit 2, the password masked',
    async (password) => {
      const result = await stormguard([
        'budget',
        'status',
        '--postgres',
        `postgres://app:${password}@127.0.0.1:5499/shop`,
      ]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('postgres://app:***@127.0.0.1:5499/shop');
      expectNoSecret(result.stderr + result.stdout);
    },
  );

  it('says how to encode the password', async () => {
    const result = await stormguard(['dlq', 'list', 'q', '--redis', 'redis://:SECRET#TOKEN@127.0.0.1:6390']);
    expect(result.stderr).toBe(
      'stormguard: --redis: "redis://:***@127.0.0.1:6390" has #, ? or / in its user name or password; percent-encode them there (# is %23, ? is %3F, / is %2F)\n',
    );
  });

  it('masks a percent-encoded password when the server cannot be reached (exit 1)', async () => {
    const port = await freePort();
    const redis = await stormguard([
      'budget',
      'status',
      '--redis',
      `redis://:SECRET%23TOKEN@127.0.0.1:${port}`,
    ]);
    expect(redis.code).toBe(1);
    expect(redis.stderr).toContain(`cannot reach Redis at redis://:***@127.0.0.1:${port}`);
    expectNoSecret(redis.stderr);
    const postgres = await stormguard([
      'budget',
      'status',
      '--postgres',
      `postgres://app:SECRET%2FTOKEN@127.0.0.1:${port}/shop?password=SECRETTOKEN`,
    ]);
    expect(postgres.code).toBe(1);
    expect(postgres.stderr).toContain(`cannot reach PostgreSQL at postgres://app:***@127.0.0.1:${port}/shop`);
    expectNoSecret(postgres.stderr);
  });

  it('whatever the password holds, no check prints it', () => {
    const middle = fc.string({
      unit: fc.constantFrom('#', '?', '/', '@', ':', ',', '%', '%2', '=', '&', ' ', 'a'),
      maxLength: 8,
    });
    fc.assert(
      fc.property(middle, fc.constantFrom('', 'app'), (inner, user) => {
        const password = `SECRET${inner}TOKEN`;
        for (const check of [
          () => parseRedisTarget(`redis://${user}:${password}@cache:6379/1`).toString(),
          () =>
            parseRedisTarget(
              `redis://${user}:${password}@a:7000,redis://${user}:${password}@b:7000`,
            ).toString(),
          () => parsePostgresUrl(`postgres://${user}:${password}@db/shop`).shown,
        ]) {
          let text: string;
          try {
            const shown = check();
            text = typeof shown === 'string' ? shown : '';
          } catch (error) {
            text = (error as Error).message;
          }
          expectNoSecret(text);
        }
      }),
      { numRuns: 500 },
    );
  });
});
