import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { freePort, TestRedis, waitFor } from '../helpers/redis-server.js';

const BIN = 'dist/cli/main.js';
let server: TestRedis;

beforeAll(async () => {
  if (!existsSync(`dist/cli/commands/budget.js`))
    throw new Error(`${BIN} is missing the budget command: npm run build`);
  server = await TestRedis.start();
  const redis = new Redis(server.connection);
  const budget = new RetryBudget({ store: new RedisBudgetStore({ redis, prefix: 'cli' }), minAllowance: 5 });
  try {
    budget.recordSuccess('search', 1_000);
    for (let i = 0; i < 250; i++) await budget.trySpend('search');
    await budget.trySpend('mail');
  } finally {
    await budget.close();
    await redis.quit();
  }
});

afterAll(async () => {
  await server?.close();
});

function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('node', [BIN, ...args], (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('stormguard budget status', () => {
  it('--json lists every dependency with allowance, spent, denied, successes and headroom', async () => {
    const { code, stdout } = await cli(
      'budget',
      'status',
      '--redis',
      server.url,
      '--prefix',
      'cli',
      '--json',
    );
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual({
      prefix: 'cli',
      dependencies: [
        {
          dependency: 'mail',
          allowance: 5,
          spent: 1,
          denied: 0,
          successes: 0,
          headroom: 4,
          ratio: 0.2,
          windowMs: 60_000,
          minAllowance: 5,
        },
        {
          dependency: 'search',
          allowance: 200,
          spent: 200,
          denied: 50,
          successes: 1_000,
          headroom: 0,
          ratio: 0.2,
          windowMs: 60_000,
          minAllowance: 5,
        },
      ],
    });
  });

  it('prints a table for people', async () => {
    const { code, stdout } = await cli('budget', 'status', '--redis', server.url, '--prefix', 'cli');
    expect(code).toBe(0);
    expect(stdout).toMatch(/DEPENDENCY\s+ALLOWANCE\s+SPENT\s+DENIED\s+SUCCESSES\s+HEADROOM/);
    expect(stdout).toMatch(/search\s+200\s+200\s+50\s+1000\s+0\s/);
  });

  it('says so when a prefix holds no budgets', async () => {
    const { code, stdout } = await cli('budget', 'status', '--redis', server.url, '--prefix', 'empty');
    expect(code).toBe(0);
    expect(stdout).toContain('no retry budget state under prefix "empty"');
  });

  it('exits 2 on a bad prefix or URL and 1 when Redis is unreachable, without a stack trace', async () => {
    const badPrefix = await cli('budget', 'status', '--redis', server.url, '--prefix', 'a{b}');
    expect(badPrefix.code).toBe(2);
    expect(badPrefix.stderr).toMatch(/^stormguard: prefix "a\{b\}"/);
    expect((await cli('budget', 'status', '--redis', 'localhost:1')).code).toBe(2);
    const down = await cli('budget', 'status', '--redis', `redis://127.0.0.1:${await freePort()}`);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/cannot reach Redis/);
    expect(down.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('stormguard budget watch', () => {
  it('redraws every interval with a bar of spend against allowance', async () => {
    const { code, stdout } = await cli(
      'budget',
      'watch',
      '--redis',
      server.url,
      '--prefix',
      'cli',
      '--interval',
      '100ms',
      '--count',
      '2',
    );
    expect(code).toBe(0);
    const frames = stdout.split(/\n(?=retry budgets under)/);
    expect(frames).toHaveLength(2);
    expect(frames[0]).toMatch(/search\s+\[#{30}\] 200\/200 spent, headroom 0 {2}50 denied/);
    expect(frames[0]).toMatch(/mail\s+\[#{6}\.{24}\] 1\/5 spent, headroom 4/);
  });

  it('runs until interrupted, then exits 0', async () => {
    const child = spawn('node', [BIN, 'budget', 'watch', '--redis', server.url, '--prefix', 'cli', '--json']);
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await waitFor(() => stdout.includes('\n'), 10_000, 'the first frame');
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    const frame = JSON.parse(stdout.split('\n')[0]!) as { dependencies: { dependency: string }[] };
    expect(frame.dependencies.map((d) => d.dependency)).toEqual(['mail', 'search']);
  });
});
