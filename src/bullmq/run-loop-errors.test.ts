import { describe, expect, it } from 'vitest';
import { fatalRunLoopError, RunLoopErrors, runLoopBackoffMs } from './run-loop-errors.js';

/** BullMQ's error, as its PostgreSQL backend throws it (matched by name: BullMQ 5 has no such class). */
function bullError(name: string, message = `BullMQ: ${name}`): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

/** A loop whose waits are recorded instead of slept, and whose worker never closes unless told. */
function loopOf() {
  const waits: number[] = [];
  const fatal: Error[] = [];
  /** Each conflict told: true when fetched again at once. */
  const conflicts: boolean[] = [];
  let stop: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  const loop = new RunLoopErrors({
    queue: 'payments',
    stopped,
    onFatal: (error) => fatal.push(error),
    onConflict: (_error, again) => conflicts.push(again),
    sleep: async (ms) => {
      waits.push(ms);
    },
  });
  return { loop, waits, fatal, conflicts, stop };
}

describe('run-loop errors', () => {
  it('backs off 1 s doubling to 30 s', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 100].map(runLoopBackoffMs)).toEqual([
      0, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000,
    ]);
  });

  it('waits before each fetch after a failed one, and a fetch that succeeds resets the wait', async () => {
    const { loop, waits } = loopOf();
    const failing = () => Promise.reject(new Error('function move_to_active does not exist'));
    for (let i = 0; i < 7; i++) await expect(loop.fetch(failing)).rejects.toThrow('move_to_active');
    expect(waits).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000]);
    expect(await loop.fetch(async () => 'job')).toBe('job');
    expect(loop.failures).toBe(0);
    await expect(loop.fetch(failing)).rejects.toThrow();
    await loop.fetch(async () => 'job');
    expect(waits).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 1_000]);
  });

  it('fetches again at once after a deadlock, 3 in a row, then backs off; a success resets the count', async () => {
    const { loop, waits, conflicts } = loopOf();
    const deadlocked = () => Promise.reject(Object.assign(new Error('deadlock detected'), { code: '40P01' }));
    for (let i = 0; i < 5; i++) await expect(loop.fetch(deadlocked)).rejects.toThrow('deadlock detected');
    await loop.fetch(async () => 'job');
    expect(waits).toEqual([1_000, 2_000]);
    for (let i = 0; i < 3; i++) await expect(loop.fetch(deadlocked)).rejects.toThrow('deadlock detected');
    expect(await loop.fetch(async () => 'job')).toBe('job');
    expect(waits).toEqual([1_000, 2_000]);
    // Every conflict is told, the ones fetched again at once as such.
    expect(conflicts).toEqual([true, true, true, false, false, true, true, true]);
  });

  it('a schema BullMQ never migrated is reported once, as one clear error, and no fetch runs after it', async () => {
    const { loop, fatal, stop } = loopOf();
    const missing = bullError('SchemaMigrationRequiredError');
    const first = loop.fetch(() => Promise.reject(missing));
    expect(loop.absorbs(missing)).toBe(true);
    let fetched = false;
    const later = loop.fetch(async () => {
      fetched = true;
    });
    stop();
    expect(await first).toBeUndefined();
    expect(await later).toBeUndefined();
    expect(fetched).toBe(false);
    expect(fatal).toHaveLength(1);
    expect(fatal[0]?.message).toBe(
      'worker "payments" closed: BullMQ\'s PostgreSQL schema is not migrated, so no job can be fetched. ' +
        "Pass `migrate: true` in the worker's connection (`connection: { connectionString, migrate: true }`), " +
        "or run BullMQ's migrations (`runMigrations` from bullmq) before starting workers",
    );
    expect(fatal[0]?.cause).toBe(missing);
  });

  it('lets every other error through', () => {
    const { loop, fatal } = loopOf();
    expect(loop.absorbs(new Error('ECONNREFUSED'))).toBe(false);
    expect(loop.absorbs('text')).toBe(false);
    expect(loop.absorbs(null)).toBe(false);
    expect(fatal).toEqual([]);
    expect(fatalRunLoopError('q', bullError('toString'))).toBeUndefined();
    expect(fatalRunLoopError('q', bullError('SchemaVersionMismatchError', 'needs BullMQ 7'))?.message).toBe(
      'worker "q" closed: needs BullMQ 7 (a newer BullMQ migrated the schema)',
    );
  });
});
