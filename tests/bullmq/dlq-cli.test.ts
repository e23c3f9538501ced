import type { ChildProcess } from 'node:child_process';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { replayOrigin } from '../../src/bullmq/dead-letter-ids.js';
import { type DeadLetterQueue, deadLetterQueue } from '../../src/bullmq/dead-letter-queue.js';
import { queueTag } from '../../src/common/keys.js';
import { RedisAuditLog } from '../../src/redis/audit-log.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { RedisReplayRunStore } from '../../src/redis/replay-run-store.js';
import { createReplayRun, startReplayRun } from '../../src/runtime/replay/replay-runs.js';
import { type CliResult, ensureCliBuilt, cli as runCli, spawnCli } from '../helpers/cli.js';
import { freePort, waitFor } from '../helpers/redis-server.js';
import { deadLetter, redisForFile, uniqueQueue } from './dlq-fixtures.js';

beforeAll(() => ensureCliBuilt('dlq'), 120_000);
const env = redisForFile();

/** Runs the CLI against this file's Redis. */
function cli(...args: string[]): Promise<CliResult> {
  return runCli(...args, '--redis', env.server.url);
}

/** The dead letters of a fresh queue, in the store the CLI reads by default (prefix "stormguard"). */
async function withFilledDlq(records: number, run: (dlq: DeadLetterQueue, source: Queue) => Promise<void>) {
  const queue = uniqueQueue('cli');
  const source = new Queue(queue, { connection: env.connection });
  // The queue writes its meta key a moment after it connects; a test that snapshots the keys waits for it.
  await waitFor(
    async () => (await env.redis.exists(`bull:${queue}:meta`)) === 1,
    5_000,
    'the queue meta key',
  );
  const dlq = deadLetterQueue(queue, {
    store: new RedisDeadLetterStore({ redis: env.redis }),
    queue: source,
  });
  for (let i = 0; i < records; i++)
    await dlq.add(
      deadLetter(`job-${i}`, {
        queue,
        reason: i % 2 === 0 ? 'budget-exhausted' : 'permanent',
        deadLetteredAt: Date.now() - 1_000 + i,
      }),
    );
  try {
    await run(dlq, source);
  } finally {
    await dlq.close();
    await source.close();
  }
}

/** The original ids of every job on the source queue, sorted (a duplicate shows up twice). */
async function replayedOriginals(source: Queue): Promise<string[]> {
  return (await source.getJobs()).map((job) => replayOrigin(job).originalJobId).sort();
}

function allIds(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `job-${i}`).sort();
}

describe('stormguard dlq', () => {
  it('list prints a table, and JSON with --json; filters apply; pages continue with --after', async () => {
    await withFilledDlq(4, async (dlq) => {
      const human = await cli('dlq', 'list', dlq.sourceQueue);
      expect(human.code).toBe(0);
      expect(human.stdout).toMatch(/4 of 4 matching \(4 in the queue\), oldest first/);
      expect(human.stdout).toMatch(/\d+\s+job-0\s+reindex\s+budget-exhausted\s+search/);
      const json = await cli(
        'dlq',
        'list',
        dlq.sourceQueue,
        '--reason',
        'permanent',
        '--since',
        '1h',
        '--json',
      );
      expect(json.code).toBe(0);
      const parsed = JSON.parse(json.stdout) as {
        total: number;
        matched: number;
        records: { jobId: string }[];
      };
      expect([parsed.total, parsed.matched]).toEqual([4, 2]);
      expect(parsed.records.map((r) => r.jobId)).toEqual(['job-1', 'job-3']);
      const first = await cli('dlq', 'list', dlq.sourceQueue, '--reason', 'budget-exhausted', '--limit', '1');
      expect(first.stdout).toMatch(/job-0/);
      const after = /more: --after (\S+)/.exec(first.stdout)?.[1];
      expect(after).toBeDefined();
      const second = await cli(
        'dlq',
        'list',
        dlq.sourceQueue,
        '--reason',
        'budget-exhausted',
        '--limit',
        '1',
        '--after',
        after as string,
      );
      expect(second.stdout).toMatch(/job-2/);
      expect(second.stdout).not.toMatch(/job-0/);
      const newest = await cli('dlq', 'list', dlq.sourceQueue, '--newest', '--limit', '1', '--json');
      expect(
        (JSON.parse(newest.stdout) as { records: { jobId: string }[] }).records.map((r) => r.jobId),
      ).toEqual(['job-3']);
    });
  });

  it('list without a queue lists the queues that have dead letters', async () => {
    await withFilledDlq(2, async (dlq) => {
      const human = await cli('dlq', 'list');
      expect(human.code).toBe(0);
      expect(human.stdout).toMatch(
        new RegExp(`${dlq.sourceQueue}\\s+2\\s+0\\s+kept until replayed or purged`),
      );
      const json = JSON.parse((await cli('dlq', 'list', '--json')).stdout) as {
        queues: { queue: string; count: number }[];
      };
      expect(json.queues.find((q) => q.queue === dlq.sourceQueue)).toMatchObject({ count: 2, evicted: 0 });
    });
  });

  it('a queue the store does not know is bad input (exit 2) naming the queues it does know, and writes nothing', async () => {
    await withFilledDlq(1, async (dlq) => {
      const before = (await env.redis.keys('*')).sort();
      for (const sub of [['list'], ['replay'], ['purge'], ['show']]) {
        const result = await cli('dlq', ...sub, 'nosuchqueue', ...(sub[0] === 'show' ? ['1'] : []));
        expect(result.code, sub[0]).toBe(2);
        expect(result.stderr).toMatch(
          /no dead letters are kept for queue "nosuchqueue".*queues with dead letters: .*/,
        );
        expect(result.stderr).toContain(dlq.sourceQueue);
        expect(result.stderr.trim().split('\n')).toHaveLength(1);
      }
      expect((await env.redis.keys('*')).sort()).toEqual(before);
      const empty = await cli('dlq', 'list', '');
      expect(empty.code).toBe(2);
      expect(empty.stderr).toMatch(/<queue>: the argument is empty/);
    });
  });

  it('a malformed record is listed as malformed, shown as such, skipped by replay; nothing crashes', async () => {
    await withFilledDlq(3, async (dlq, source) => {
      const ids = (await dlq.list()).records.map((r) => r.id);
      const recordsKey = `${queueTag('stormguard', dlq.sourceQueue)}:dl:rec`;
      await env.redis.hset(recordsKey, ids[1] as string, '{"name": 7}');
      const list = await cli('dlq', 'list', dlq.sourceQueue);
      expect(list.code).toBe(0);
      expect(list.stdout).toMatch(new RegExp(`${ids[1]}\\s+\\?\\s+\\?\\s+malformed`));
      expect(list.stdout).toMatch(/job-0/);
      expect(list.stdout).toMatch(/job-2/);
      const show = await cli('dlq', 'show', dlq.sourceQueue, ids[1] as string);
      expect(show.code).toBe(0);
      expect(show.stdout).toMatch(/malformed:/);
      const replay = await cli('dlq', 'replay', dlq.sourceQueue, '--json');
      // The malformed record stays in the store: the replay did not move everything it selected.
      expect(replay.code).toBe(1);
      const report = JSON.parse(replay.stdout) as { moved: unknown[]; malformed: { id: string }[] };
      expect(report.moved).toHaveLength(2);
      expect(report.malformed.map((m) => m.id)).toEqual([ids[1]]);
      expect(await replayedOriginals(source)).toEqual(['job-0', 'job-2']);
      // Recorded in the audit log, with who (nobody named here) and the counts.
      const { entries } = await new RedisAuditLog({ redis: env.redis }).list({ limit: 100 });
      const mine = entries.find((e) => e.action === 'replay.run' && e.target === dlq.sourceQueue);
      expect(mine).toMatchObject({ by: 'anonymous', detail: { moved: 2, skipped: 0, failed: 0 } });
    });
  });

  it('show prints one record by its id; an unknown id fails (exit 1), a non-id is bad input (exit 2)', async () => {
    await withFilledDlq(1, async (dlq) => {
      const [record] = (await dlq.list()).records;
      const id = record?.id as string;
      const json = await cli('dlq', 'show', dlq.sourceQueue, id, '--json');
      expect(json.code).toBe(0);
      expect(JSON.parse(json.stdout)).toEqual(await dlq.get(id));
      const human = await cli('dlq', 'show', dlq.sourceQueue, id);
      expect(human.stdout).toMatch(/reason:\s+budget-exhausted: 5 of 5 attempts used/);
      expect(human.stdout).toMatch(/job:\s+job-0/);
      expect(human.stdout).toContain(
        'attempts: none kept (the record was filed before records kept each attempt)',
      );

      const entry = (attempt: number, decision: 'retry' | 'dead-letter') => ({
        attempt,
        at: Date.UTC(2026, 0, 2, 3, 4, attempt),
        dependency: 'search',
        error: { name: 'TransientError', message: `search timed out (${attempt})` },
        classification: { retryable: true, reason: 'ETIMEDOUT' },
        decision,
        cause: decision === 'retry' ? 'backoff' : 'max-attempts',
        ...(decision === 'retry' ? { delayMs: 1_500 } : {}),
      });
      const withHistory = await dlq.add(
        deadLetter('job-h', {
          queue: dlq.sourceQueue,
          attemptsMade: 3,
          history: [entry(2, 'retry'), entry(3, 'dead-letter')],
        }),
      );
      const shown = (await cli('dlq', 'show', dlq.sourceQueue, withHistory)).stdout;
      expect(shown).toContain('the last 2 of 3 attempts, oldest first:');
      const lines = shown.split('\n');
      const at = lines.findIndex((l) => l.startsWith('ATTEMPT'));
      expect(lines[at]).toMatch(/^ATTEMPT\s+AT\s+DEPENDENCY\s+CLASSIFIED\s+DECISION\s+DELAY\s+ERROR$/);
      expect(lines[at + 1]).toMatch(
        /^2\s+2026-01-02T03:04:02.000Z\s+search\s+ETIMEDOUT \(retryable\)\s+retry \(backoff\)\s+1.5s\s+TransientError: search timed out \(2\)$/,
      );
      expect(lines[at + 2]).toMatch(
        /^3\s+2026-01-02T03:04:03.000Z\s+search\s+ETIMEDOUT \(retryable\)\s+dead-letter \(max-attempts\)\s+-\s+TransientError: search timed out \(3\)$/,
      );
      const missing = await cli('dlq', 'show', dlq.sourceQueue, '999999');
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/no dead-letter record 999999/);
      for (const [bad, message] of [
        ['job-0', /"job-0" is not a record id/],
        ['', /<id>: the argument is empty/],
      ] as const) {
        const result = await cli('dlq', 'show', dlq.sourceQueue, bad);
        expect(result.code).toBe(2);
        expect(result.stderr).toMatch(message);
      }
    });
  });

  it('replay --dry-run moves nothing; replay moves once; a second replay finds nothing', async () => {
    await withFilledDlq(6, async (dlq, source) => {
      const dry = await cli('dlq', 'replay', dlq.sourceQueue, '--dry-run', '--json');
      expect(dry.code).toBe(0);
      expect(JSON.parse(dry.stdout)).toMatchObject({ dryRun: true, matched: 6 });
      expect(await replayedOriginals(source)).toEqual([]);
      const human = await cli('dlq', 'replay', dlq.sourceQueue, '--reason', 'budget-exhausted');
      expect(human.code).toBe(0);
      expect(human.stdout).toMatch(/replayed 3 of 3 matching jobs/);
      const rest = await cli('dlq', 'replay', dlq.sourceQueue, '--json', '--rate', '1000/s');
      expect(JSON.parse(rest.stdout)).toMatchObject({ matched: 3, interrupted: false });
      const again = await cli('dlq', 'replay', dlq.sourceQueue, '--json');
      expect(JSON.parse(again.stdout)).toMatchObject({ matched: 0, moved: [] });
      expect(await replayedOriginals(source)).toEqual(allIds(6));
    });
  });

  it('runs lists a started run however many runs came after it', async () => {
    const queue = uniqueQueue('runs');
    const store = new RedisDeadLetterStore({ redis: env.redis });
    const runs = new RedisReplayRunStore({ redis: env.redis });
    const started = await createReplayRun({ store, runs }, queue, { by: 'alice' });
    await startReplayRun({ runs }, started.id, { by: 'alice' });
    // 100 newer runs of another queue: previews, never started.
    for (let i = 0; i < 100; i++) await createReplayRun({ store, runs }, `${queue}-other`, {});
    const result = await cli('dlq', 'runs', queue, '--json');
    expect(result.code).toBe(0);
    const listed = (JSON.parse(result.stdout) as { runs: { id: string }[] }).runs;
    expect(listed.map((r) => r.id)).toEqual([started.id]);
  });

  it('purge refuses without --yes (exit 2) and deletes with it', async () => {
    await withFilledDlq(3, async (dlq) => {
      const refused = await cli('dlq', 'purge', dlq.sourceQueue);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/refusing to delete 3 record\(s\).*--yes/);
      expect(await dlq.count()).toBe(3);
      const done = await cli('dlq', 'purge', dlq.sourceQueue, '--reason', 'permanent', '--yes', '--json');
      expect(JSON.parse(done.stdout)).toMatchObject({ purged: 1 });
      expect(await dlq.count()).toBe(2);
    });
  });

  it.each([
    [['--rate', 'fast'], /--rate: "fast" is not a rate; write it like 50\/s/],
    [['--reason', 'bored'], /--reason: "bored" is not a dead-letter reason/],
    [['--since', '1x'], /--since: "1x" is not a duration/],
  ])('replay %j is bad input: exit 2 and one line that says why', async (args, message) => {
    const result = await cli('dlq', 'replay', 'index', ...args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('an unreachable Redis is a failure (exit 1) with a readable message, not a hang', async () => {
    const port = await freePort();
    const result = await runCli('dlq', 'list', 'index', '--redis', `redis://127.0.0.1:${port}`);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/cannot reach Redis at redis:\/\/127\.0\.0\.1/);
  });

  it('replay --when-healthy waits while the budget denies, and goes on once successes raise the allowance', async () => {
    await withFilledDlq(3, async (dlq, source) => {
      const client = new Redis(env.server.connection);
      const budget = new RetryBudget({
        store: new RedisBudgetStore({ redis: client }),
        minAllowance: 1,
      });
      try {
        // The floor allows one retry: spend it, then be denied once. The budget for search is now denying.
        expect((await budget.trySpend('search')).granted).toBe(true);
        expect((await budget.trySpend('search')).granted).toBe(false);
        const child = spawnCli(
          [
            'dlq',
            'replay',
            dlq.sourceQueue,
            '--redis',
            env.server.url,
            '--when-healthy',
            '--budget-floor',
            '1',
            '--poll-interval',
            '50ms',
            '--json',
          ],
          { stdio: ['ignore', 'ignore', 'pipe'] },
        );
        let stderr = '';
        child.stderr?.on('data', (chunk) => {
          stderr += String(chunk);
        });
        await waitFor(() => stderr.includes('waiting for search'), 30_000, 'the replay to wait for search');
        expect(await dlq.count()).toBe(3);
        // Successes come back: 100 × 0.2 = 20 retries allowed, 1 spent, so search is healthy again.
        budget.recordSuccess('search', 100);
        await budget.flush();
        expect(await exited(child)).toBe(0);
        expect(await replayedOriginals(source)).toEqual(allIds(3));
      } finally {
        await budget.close();
        client.disconnect();
      }
    });
  }, 90_000);

  it('a replay killed with SIGKILL half-way and run again replays every job exactly once', async () => {
    await withFilledDlq(40, async (dlq, source) => {
      const child = spawnReplay(dlq.sourceQueue, '--rate', '10/s');
      await movedAFew(child, dlq);
      child.kill('SIGKILL');
      await exited(child);
      const left = await dlq.count();
      expect(left).toBeGreaterThan(0);
      expect((await replayedOriginals(source)).length).toBe(40 - left);
      const rerun = await cli('dlq', 'replay', dlq.sourceQueue, '--json');
      expect(JSON.parse(rerun.stdout)).toMatchObject({ matched: left, failed: [] });
      expect(await replayedOriginals(source)).toEqual(allIds(40));
      expect(await dlq.count()).toBe(0);
    });
  }, 90_000);

  it('Ctrl-C stops a replay between two jobs, reports it (exit 1), and a re-run finishes it', async () => {
    await withFilledDlq(40, async (dlq, source) => {
      const child = spawnReplay(dlq.sourceQueue, '--rate', '10/s', '--json');
      let stdout = '';
      child.stdout?.on('data', (chunk) => {
        stdout += String(chunk);
      });
      await movedAFew(child, dlq);
      child.kill('SIGINT');
      expect(await exited(child)).toBe(1);
      const report = JSON.parse(stdout) as { interrupted: boolean; moved: unknown[]; stoppedBecause: string };
      expect(report.interrupted).toBe(true);
      expect(report.stoppedBecause).toBe('interrupted');
      expect(await dlq.count()).toBe(40 - report.moved.length);
      const rerun = await cli('dlq', 'replay', dlq.sourceQueue, '--json');
      expect(rerun.code).toBe(0);
      expect(await replayedOriginals(source)).toEqual(allIds(40));
    });
  }, 90_000);
});

function spawnReplay(queue: string, ...args: string[]): ChildProcess & { stderrText: () => string } {
  const child = spawnCli(['dlq', 'replay', queue, '--redis', env.server.url, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += String(chunk);
  });
  return Object.assign(child, { stderrText: () => stderr });
}

/** Waits until the replay has moved a few of its 40 jobs; fails with its stderr if it ended first. */
async function movedAFew(
  child: ChildProcess & { stderrText: () => string },
  dlq: DeadLetterQueue,
): Promise<void> {
  await waitFor(
    async () => child.exitCode !== null || (await dlq.count()) <= 32,
    30_000,
    'the replay to move a few jobs',
  ).catch((error: Error) => {
    throw new Error(`${error.message}; replay stderr: ${child.stderrText()}`);
  });
  expect(child.exitCode, `the replay ended early: ${child.stderrText()}`).toBeNull();
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}
