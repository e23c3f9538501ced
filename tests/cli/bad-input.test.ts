import { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { cli, ensureCliBuilt } from '../helpers/cli.js';
import { freePort, TestRedis } from '../helpers/redis-server.js';

beforeAll(() => ensureCliBuilt('plan'), 120_000);

/** Every command a user can run, as its words on the command line. */
const COMMANDS = [
  ['breaker', 'status'],
  ['budget', 'status'],
  ['budget', 'watch'],
  ['dlq', 'list'],
  ['dlq', 'show'],
  ['dlq', 'replay'],
  ['dlq', 'purge'],
  ['lint'],
  ['metrics', 'serve'],
  ['plan'],
  ['schedule'],
  ['simulate'],
];

describe('every stormguard command', () => {
  it.each(COMMANDS.map((words) => words.join(' ')))(
    '%s --help offers --json and ends with examples',
    async (command) => {
      const { code, stdout } = await cli(...command.split(' '), '--help');
      expect(code).toBe(0);
      expect(stdout).toMatch(/^ {2}--json\b/m);
      expect(stdout).not.toContain('(default: [])');
      expect(stdout).toMatch(/\nExamples:\n {2}\$ stormguard /);
    },
  );
});

describe('bad input: exit 2, one line naming the flag, no stack trace', () => {
  it.each([
    [['plan', '--window', '15x'], /^stormguard: --window: "15x" is not a duration/],
    [['schedule', '--preset', 'nope'], /^stormguard: unknown preset "nope"; use one of /],
    [['schedule', '--config', 'missing.yaml'], /^stormguard: missing\.yaml: config file does not exist/],
    [['lint', 'missing.yaml'], /^stormguard: missing\.yaml: config file does not exist/],
    [['simulate', '--scenario', 'missing.yaml'], /^stormguard: --scenario: cannot read missing\.yaml/],
    [['simulate', '--report', 'no-such-dir/report.html'], /^stormguard: --report: cannot write no-such-dir/],
    [['budget', 'watch', '--interval', 'soon'], /^stormguard: --interval: "soon" is not a duration/],
    [
      ['budget', 'status', '--redis', 'localhost:6379'],
      /^stormguard: --redis: "localhost:6379" must start with redis:/,
    ],
    [['breaker', 'status', '--redis', 'not a url'], /^stormguard: --redis: "not a url" is not a URL/],
    [['dlq', 'list', 'index', '--redis', 'http://x'], /^stormguard: --redis: "http:\/\/x" must start with/],
    [['metrics', 'serve', '--redis', '::'], /^stormguard: --redis: "::" is not a URL/],
    [['dlq', 'show', 'index', ''], /^stormguard: <id>: the argument is empty/],
    [['budget', 'status', '--prefix', ''], /^stormguard: --prefix: the value is empty/],
    [['schedule', '--config', ''], /^stormguard: --config: the value is empty/],
    [['budget', 'status', '--redis', 'redis://'], /^stormguard: --redis: "redis:\/\/" names no host/],
    [['breaker', 'status', '--redis', 'redis:///3'], /^stormguard: --redis: "redis:\/\/\/3" names no host/],
    [
      ['dlq', 'list', 'index', '--redis', 'redis://127.0.0.1:1/abc'],
      /^stormguard: --redis: "redis:\/\/127\.0\.0\.1:1\/abc" has the path "\/abc", which is not a database number/,
    ],
    [
      ['budget', 'status', '--redis', 'redis://:hunter2@127.0.0.1:1/1/2'],
      /^stormguard: --redis: "redis:\/\/:\*\*\*@127\.0\.0\.1:1\/1\/2" has the path/,
    ],
    [
      ['budget', 'status', '--redis', 'redis://127.0.0.1:1?db=3'],
      /^stormguard: --redis: .* has the query parameter "db", which is not supported; put the database in the path/,
    ],
  ])('%j', async (args, message) => {
    const { code, stdout, stderr } = await cli(...args);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(message);
    expect(stderr.trim().split('\n')).toHaveLength(1);
  });

  it('a database the server does not have is bad input (exit 2), never database 0', async () => {
    const server = await TestRedis.start();
    try {
      const redis = new Redis(server.connection);
      await redis.set('{stormguard:budget:search}:probe', 'in database 0');
      await redis.quit();
      for (const args of [
        ['budget', 'status'],
        ['dlq', 'purge', 'index', '--yes'],
      ]) {
        const { code, stdout, stderr } = await cli(...args, '--redis', `${server.url}/99`);
        expect(code).toBe(2);
        expect(stdout).toBe('');
        expect(stderr).toBe(
          `stormguard: --redis: "${server.url}/99": the server has no database 99; use one it has (0 to its "databases" setting minus 1; 0 on Redis Cluster)\n`,
        );
      }
      const check = new Redis(server.connection);
      expect(await check.get('{stormguard:budget:search}:probe')).toBe('in database 0');
      await check.quit();
      // An existing database other than 0 is used, not database 0.
      const { code, stdout } = await cli('budget', 'status', '--json', '--redis', `${server.url}/3`);
      expect(code).toBe(0);
      expect(stdout).not.toContain('search');
    } finally {
      await server.close();
    }
  });

  it('a password in the URL never appears in a message', async () => {
    const url = `redis://:hunter2@127.0.0.1:${await freePort()}`;
    const { code, stderr } = await cli('budget', 'status', '--redis', url);
    expect(code).toBe(1);
    expect(stderr).not.toContain('hunter2');
    expect(stderr).toMatch(/^stormguard: cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:/);
  });

  it('an unreachable Redis is a failure (exit 1) that says why, in one line', async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    const { code, stderr } = await cli('budget', 'status', '--redis', url);
    expect(code).toBe(1);
    expect(stderr).toBe(`stormguard: cannot reach Redis at ${url}: connect ECONNREFUSED ${url.slice(8)}\n`);
  });
});
