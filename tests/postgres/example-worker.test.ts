import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createPostgresBackend, Queue } from 'bullmq';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCliBuilt, ROOT } from '../helpers/cli.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { waitFor } from '../helpers/redis-server.js';

const bed = postgresBed();
let pool: pg.Pool;
// The example imports the package by its name: the built one.
beforeAll(async () => {
  await ensureCliBuilt('dashboard');
  pool = new pg.Pool({ connectionString: bed.url, max: 1 });
}, 120_000);
afterAll(async () => {
  await pool?.end();
});

describe('examples/postgres-worker.ts, as a new user pastes it', () => {
  it("creates BullMQ's tables and its own on first use, completes a job, and stops on Ctrl-C", async () => {
    const child: ChildProcess = spawn(
      process.execPath,
      ['--import', 'tsx', `${ROOT}examples/postgres-worker.ts`],
      { env: { ...process.env, DATABASE_URL: bed.url }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = once(child, 'exit');
    let output = '';
    let errors = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      errors += chunk.toString();
    });
    const withStderr = (error: Error): never => {
      throw new Error(`${error.message}; the example's stderr: ${errors}`);
    };
    let queue: Queue | undefined;
    try {
      await waitFor(
        async () => (await pool.query("SELECT to_regclass('bullmq.migration') AS t")).rows[0]?.t !== null,
        20_000,
        "the example to create BullMQ's tables",
      ).catch(withStderr);
      // The producer's side migrates nothing (it checks the schema once, when opened): the tables are the example's doing.
      queue = new Queue('index', { connection: bed.url } as never, createPostgresBackend as never);
      const job = await queue.add('reindex', { docId: 'doc-1' });
      await waitFor(
        () => output.includes(`completed ${job.id}`),
        20_000,
        `the example to complete job ${job.id}`,
      ).catch(withStderr);
      child.kill('SIGINT');
      const [code] = await exited;
      expect(code).toBe(0);
      expect(output).toBe(`completed ${job.id}\n`);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await queue?.close();
    }
  }, 60_000);
});
