import type { AttemptState, DeadLetterRecord } from '../../src/runtime/contracts.js';
import type { JobHandle } from '../../src/runtime/job-handle.js';
import {
  MemoryDeadLetterStore,
  type MemoryDeadLetterStoreOptions,
} from '../../src/runtime/memory-dead-letter-store.js';
import type { JobNote } from '../../src/runtime/pending-outcome.js';

/**
 * A job as its queue keeps it between runs: the note lives in the job's own record (copied as JSON, as a
 * queue stores it), the start count grows with every run, and every move is remembered. `runs` counts
 * the processor's runs for the test that runs it.
 *
 * @example
 * const job = new QueuedJob('pay-1');
 * await runtime.run(job.handle(), work);
 */
export class QueuedJob {
  note: JobNote | undefined;
  starts = 0;
  readonly moves: number[] = [];
  runs = 0;
  constructor(
    readonly id: string,
    readonly name = 'charge',
    readonly data: unknown = { card: '4111 1111 1111 1111' },
    readonly queue = 'payments',
  ) {}

  handle(): JobHandle {
    this.starts += 1;
    const self = this;
    return {
      ref: { queue: this.queue, jobId: this.id, createdAt: 0 },
      name: this.name,
      data: this.data,
      opts: {},
      starts: this.starts,
      finishes: 0,
      stalls: 0,
      moveToDelayed: async (dueAtMs) => {
        self.moves.push(dueAtMs);
      },
      get note() {
        return self.note;
      },
      keepNote: async (note) => {
        self.note = note === undefined ? undefined : JSON.parse(JSON.stringify(note));
      },
    };
  }
}

/** A memory store that can be taken down (refuses every filing as a store that is down would). */
export class FlakyStore extends MemoryDeadLetterStore {
  down = false;
  refuse: ((record: DeadLetterRecord) => Error | undefined) | undefined;
  filings = 0;
  constructor(options: MemoryDeadLetterStoreOptions = {}) {
    super(options);
  }
  override file(record: DeadLetterRecord, state: AttemptState, ttlMs: number) {
    this.filings += 1;
    if (this.down)
      throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });
    const refusal = this.refuse?.(record);
    if (refusal) throw refusal;
    return super.file(record, state, ttlMs);
  }
}
