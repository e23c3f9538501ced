import type { ChildProcess } from 'node:child_process';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { budgetKey } from '../../src/redis/budget-keys.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { cli, spawnCli } from '../helpers/cli.js';
import { cliRedisBed } from '../helpers/cli-redis.js';
import { freePort, TestRedis, waitFor } from '../helpers/redis-server.js';

const bed = cliRedisBed('budget', async (redis: Redis) => {
  const budget = new RetryBudget({ store: new RedisBudgetStore({ redis, prefix: 'cli' }), minAllowance: 5 });
  try {
    budget.recordSuccess('search', 1_000);
    for (let i = 0; i < 250; i++) await budget.trySpend('search');
    await budget.trySpend('mail');
  } finally {
    await budget.close();
  }
  // A prefix where one dependency's key holds something no budget wrote.
  const other = new RetryBudget({ store: new RedisBudgetStore({ redis, prefix: 'cli-bad' }), log: false });
  await other.trySpend('search');
  await other.close();
  await redis.set(budgetKey('cli-bad', 'broken'), 'hello');
  // A change of settings rolling out: a higher settingsVersion wrote last.
  const next = new RetryBudget({
    store: new RedisBudgetStore({ redis, prefix: 'cli-bad' }),
    windowMs: 30_000,
    minAllowance: 4,
    settingsVersion: 1,
    log: false,
  });
  await next.trySpend('search');
  await next.close();
});

describe('stormguard budget status', () => {
  it('--json lists every dependency with allowance, spent, denied, successes and headroom', async () => {
    const { code, stdout } = await bed.cli('budget', 'status', '--prefix', 'cli', '--json');
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

  it('lists a dependency whose state cannot be read as unreadable, beside the others', async () => {
    const table = await bed.cli('budget', 'status', '--prefix', 'cli-bad');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^broken\s+-\s+-\s+-/m);
    expect(table.stdout).toMatch(/^search\s+5\s+2\s+0\s/m);
    expect(table.stdout).toContain(
      '"search": settingsVersion 1 (ratio 0.2, floor 4, window 30s) takes over once it holds a whole window; until then both bind',
    );
    expect(table.stdout).toContain(
      '"broken": state unreadable (not MessagePack); its next retry decision starts it afresh',
    );
    const json = JSON.parse((await bed.cli('budget', 'status', '--prefix', 'cli-bad', '--json')).stdout);
    expect(
      json.dependencies.map((d: { dependency: string; unreadable?: string }) => [d.dependency, d.unreadable]),
    ).toEqual([
      ['broken', 'not MessagePack'],
      ['search', undefined],
    ]);
    expect(json.dependencies[1].pending).toEqual({
      ratio: 0.2,
      windowMs: 30_000,
      minAllowance: 4,
      settingsVersion: 1,
    });
  });

  it('prints a table for people', async () => {
    const { code, stdout } = await bed.cli('budget', 'status', '--prefix', 'cli');
    expect(code).toBe(0);
    expect(stdout).toMatch(/DEPENDENCY\s+ALLOWANCE\s+SPENT\s+DENIED\s+SUCCESSES\s+HEADROOM/);
    expect(stdout).toMatch(/search\s+200\s+200\s+50\s+1000\s+0\s/);
  });

  it('says so when a prefix holds no budgets', async () => {
    const { code, stdout } = await bed.cli('budget', 'status', '--prefix', 'empty');
    expect(code).toBe(0);
    expect(stdout).toContain('no retry budget state under prefix "empty"');
  });

  it('exits 2 on a bad prefix or URL and 1 when Redis is unreachable, without a stack trace', async () => {
    const badPrefix = await bed.cli('budget', 'status', '--prefix', 'x'.repeat(65));
    expect(badPrefix.code).toBe(2);
    expect(badPrefix.stderr).toMatch(/^stormguard: prefix "x{65}": must be at most 64 characters/);
    expect((await cli('budget', 'status', '--redis', 'localhost:1')).code).toBe(2);
    const down = await cli('budget', 'status', '--redis', `redis://127.0.0.1:${await freePort()}`);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/cannot reach Redis/);
    expect(down.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('stormguard budget watch', () => {
  it('redraws every interval with a bar of spend against allowance', async () => {
    const { code, stdout } = await bed.cli(
      'budget',
      'watch',
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
    const watch = startWatch(bed.server.url, '1s');
    await waitFor(() => watch.frames().length > 0, 10_000, 'the first frame');
    watch.child.kill('SIGINT');
    expect(await watch.exited).toBe(0);
    expect(watch.frames()[0]?.dependencies?.map((d) => d.dependency)).toEqual(['mail', 'search']);
  });

  it('keeps going through a Redis restart: a frame with the error, then budgets again', async () => {
    const blip = await TestRedis.start();
    const watch = startWatch(blip.url, '100ms');
    try {
      await waitFor(() => watch.frames().some((f) => f.dependencies), 10_000, 'a frame read from Redis');
      await blip.stop();
      await waitFor(() => watch.frames().some((f) => f.error), 10_000, 'a frame showing the Redis error');
      await blip.restart();
      const errorAt = watch.frames().findIndex((f) => f.error);
      await waitFor(
        () => watch.frames().some((f, i) => i > errorAt && f.dependencies),
        10_000,
        'a frame read from Redis after it came back',
      );
      watch.child.kill('SIGINT');
      expect(await watch.exited).toBe(0);
      expect(watch.stderr()).toBe('');
    } finally {
      watch.child.kill('SIGKILL');
      await blip.close();
    }
  });
});

interface WatchFrame {
  at: string;
  dependencies?: { dependency: string }[];
  error?: string;
}

/** Starts `budget watch --json` on `url`; frames are parsed as they arrive. */
function startWatch(url: string, interval: string) {
  const child: ChildProcess = spawnCli(
    ['budget', 'watch', '--redis', url, '--prefix', 'cli', '--json', '--interval', interval],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const frames = (): WatchFrame[] =>
    stdout
      .split('\n')
      .slice(0, -1)
      .map((line) => JSON.parse(line) as WatchFrame);
  return { child, exited, frames, stderr: () => stderr };
}
