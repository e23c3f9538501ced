import type { Clock } from '../common/clock.js';
import { describeError } from '../common/error-text.js';
import { isRedactionFailedError } from '../errors/redaction-failed-error.js';
import type { DeadLetterReason } from '../policy/types.js';
import type { AttemptEntry, AttemptStateStore, DeadLetterRecord, DeadLetterStore } from './contracts.js';
import type { JobLabels } from './events.js';
import type { JobHandle } from './job-handle.js';
import {
  type BookkeepingBackoff,
  bookkeepingDelayMs,
  isPermanentRefusal,
  type JobNote,
  type PendingOutcome,
  type PendingWrite,
  refusalText,
  safeFormOf,
} from './pending-outcome.js';
import { markSafeForm } from './redaction.js';
import type { JobEventSink, RunOutcome } from './run-outcome.js';

/** An error's class, message and stack, as stormguard hands it on (redacted when redaction is configured). */
export interface ErrorText {
  name: string;
  message: string;
  stack?: string;
}

/** What an {@link OutcomeWriter} needs from the runtime. */
export interface OutcomeWriterSettings {
  queue: string;
  /** The job's max age, when the policy has one: a write still refused past it is given up. */
  maxAgeMs: number | undefined;
  attempts: AttemptStateStore;
  deadLetters: Pick<DeadLetterStore, 'file'> | undefined;
  clock: Clock;
  events: JobEventSink;
  /** Reports a refusal (already redacted by the runtime). */
  report: (error: unknown) => void;
  /** An error's text as it may leave stormguard: through the redaction configured, else as it is. */
  errorText: (error: ErrorText, record: DeadLetterRecord | undefined) => ErrorText;
  backoff: BookkeepingBackoff;
}

/**
 * Writes the outcome stormguard decided for a job whose processor has run: the retry's attempt state then
 * the move, or the dead-letter record with the final state. A write a store refuses is never a reason to
 * run the processor again:
 *
 * - a transient refusal (a store down, a timeout) keeps the outcome in the job's own record
 *   ({@link JobHandle.keepNote}) and delays the job 5 s, doubling to 5 minutes, until its max age; its next
 *   run writes the outcome and never calls the processor;
 * - a refusal no retry can fix ({@link isPermanentRefusal}) files the record's safe form (what was refused
 *   replaced by a marker that says why); if even that is refused, or a transient refusal outlives the
 *   job's max age, the job is failed in its queue's failed set ('unfiled' event), visible and never re-run;
 * - when even the job's own record refuses the note, the job is not moved: its lock runs out and the
 *   queue's stalled-job recovery brings it back, counted in the job's own stall count (maxStalledCount).
 */
export class OutcomeWriter {
  constructor(private readonly settings: OutcomeWriterSettings) {}

  /**
   * Writes `pending.write`. `ended`: the queue has ended the job already (it failed it on its own), so a
   * refused write cannot be kept for a later run. `noted`: the job carries this outcome as its note.
   */
  async write(
    job: JobHandle,
    pending: PendingOutcome,
    ended: boolean,
    noted: boolean,
    onRefused?: (refusal: unknown) => void,
    unkept?: (refusal: unknown) => PendingWrite | undefined,
  ): Promise<RunOutcome<never>> {
    try {
      return await this.#perform(job, pending.write, noted);
    } catch (refusal) {
      const outcome = await this.#refused(job, pending, refusal, ended, onRefused, unkept);
      // A safe form filed is a dead letter like any other; anything else tells the trace what refused.
      if (outcome.type !== 'dead-lettered') onRefused?.(refusal);
      return outcome;
    }
  }

  /** Writes the outcome a job carries in its note, without running anything else. */
  completePending(job: JobHandle, pending: PendingOutcome): Promise<RunOutcome<never>> {
    return this.write(job, pending, false, true);
  }

  async #perform(job: JobHandle, write: PendingWrite, noted: boolean): Promise<RunOutcome<never>> {
    const { settings } = this;
    if (write.type === 'retry') {
      // State first, then the move: a crash in between over-counts an attempt, never under-counts one.
      await settings.attempts.writeAttempts(job.ref, write.state, write.ttlMs);
      if (noted) await job.keepNote?.(withoutPending(job.note));
      await job.moveToDelayed(Math.max(write.dueAtMs, settings.clock.now()));
      if (settings.events.has('retry'))
        settings.events.emit('retry', {
          ...labelsOf(settings.queue, job, write.dependency),
          delayMs: write.delayMs,
          retry: write.retry,
          cause: write.cause,
          chargesAttempt: write.chargesAttempt,
          errorClass: write.errorClass,
        });
      return { type: 'delayed' };
    }
    const store = settings.deadLetters;
    if (!store) throw new Error('a dead letter is pending but the worker has no dead-letter store');
    // The store files the record and marks the state in one write: a worker that crashes before the job
    // ends leaves a job the next worker only ends, never runs again.
    // A safe form read back from the job's note lost its mark (a symbol): mark it again.
    const record = write.safeForm ? markSafeForm(write.record) : write.record;
    const { id, evicted } = await store.file(record, write.state, write.ttlMs);
    const { reason, detail } = record;
    if (evicted && settings.events.has('dead-letters-evicted'))
      settings.events.emit('dead-letters-evicted', { queue: record.queue, recordId: id, evicted });
    settings.events.emit('dead-letter', {
      ...labelsOf(settings.queue, job, record.dependency),
      reason,
      ...(write.safeForm ? { safeForm: true as const } : {}),
    });
    const last = write.safeForm ? record.lastError : settings.errorText(record.lastError, record);
    return {
      type: 'dead-lettered',
      recordId: id,
      reason,
      message: `dead-lettered (${reason}): ${detail}; last error: ${last.message}`,
    };
  }

  async #refused(
    job: JobHandle,
    pending: PendingOutcome,
    refusal: unknown,
    ended: boolean,
    onRefused: ((refusal: unknown) => void) | undefined,
    unkept: ((refusal: unknown) => PendingWrite | undefined) | undefined,
  ): Promise<RunOutcome<never>> {
    const { settings } = this;
    settings.report(refusal);
    const { write } = pending;
    if (isPermanentRefusal(refusal)) {
      if (write.type === 'dead-letter' && !write.safeForm) {
        const record = safeFormOf(write.record, refusalText(refusal), !isRedactionFailedError(refusal));
        const safe: PendingWrite = { ...write, record, safeForm: true };
        return this.write(job, { ...pending, write: safe }, ended, false, onRefused);
      }
      // A retry whose state no store can keep: the dead letter `unkept` decides instead (its own safe form
      // if the store cannot hold it either).
      const instead = write.type === 'retry' ? unkept?.(refusal) : undefined;
      if (instead) return this.write(job, { ...pending, write: instead }, ended, false, onRefused);
      return this.#unfiled(job, write, refusal);
    }
    const nowMs = settings.clock.now();
    const tries = pending.tries + 1;
    const delayMs = bookkeepingDelayMs(tries, settings.backoff);
    const deadline =
      settings.maxAgeMs === undefined ? Number.POSITIVE_INFINITY : job.ref.createdAt + settings.maxAgeMs;
    if (ended || nowMs + delayMs > deadline) return this.#unfiled(job, write, refusal);
    if (job.keepNote) {
      try {
        await job.keepNote({
          ...job.note,
          pending: { write: this.#redacted(write), tries, since: pending.since },
        });
      } catch (noteError) {
        // Not moved: the lock runs out, and the queue's stalled-job recovery brings the job back, counted.
        settings.report(noteError);
        return { type: 'delayed' };
      }
    }
    try {
      await job.moveToDelayed(nowMs + delayMs);
    } catch (moveError) {
      settings.report(moveError);
    }
    const events = settings.events;
    if (events.has('outcome-pending'))
      events.emit('outcome-pending', {
        ...labelsOf(settings.queue, job, dependencyOf(write)),
        tries,
        delayMs,
        errorClass: describeError(refusal).name,
      });
    return { type: 'delayed' };
  }

  /**
   * The write as the job's own record may keep it: the queue is handed nothing raw, so every error text
   * (the record's last error, each attempt's) goes through the configured redaction first. The store
   * redacts the record again when it files it; a hook that redacts by pattern leaves it as it is.
   */
  #redacted(write: PendingWrite): PendingWrite {
    const text = this.settings.errorText;
    const record = write.type === 'dead-letter' ? write.record : undefined;
    const history = (entries: AttemptEntry[] | undefined) =>
      entries?.map((entry) => {
        const { name, message } = text(entry.error, record);
        return { ...entry, error: { name, message } };
      });
    const state = { ...write.state };
    if (state.history) state.history = history(state.history) as AttemptEntry[];
    if (write.type === 'retry' || write.safeForm || !record) return { ...write, state };
    const lastError = { ...text(record.lastError, record), classification: record.lastError.classification };
    const kept: DeadLetterRecord = { ...record, lastError };
    if (record.history) kept.history = history(record.history) as AttemptEntry[];
    return { ...write, record: kept, state };
  }

  /** Nothing could record the outcome: the job ends in its queue's failed set, never re-run. */
  #unfiled(job: JobHandle, write: PendingWrite, refusal: unknown): RunOutcome<never> {
    const { settings } = this;
    const reason: DeadLetterReason | 'bookkeeping' =
      write.type === 'dead-letter' ? write.record.reason : 'bookkeeping';
    const why = refusalText(refusal);
    settings.events.emit('unfiled', {
      ...labelsOf(settings.queue, job, dependencyOf(write)),
      reason,
      errorClass: describeError(refusal).name,
      refusal: why,
    });
    const last =
      write.type === 'dead-letter'
        ? `; last error: ${(write.safeForm ? write.record.lastError : settings.errorText(write.record.lastError, write.record)).message}`
        : '';
    const what =
      write.type === 'dead-letter'
        ? `its dead letter (${write.record.reason}: ${write.record.detail})`
        : 'its retry';
    return {
      type: 'failed',
      message: `not recorded: stormguard could not store ${what}: ${why}${last}`,
    };
  }
}

function labelsOf(queue: string, job: JobHandle, dependency: string): JobLabels {
  return { queue, task: job.name, dependency };
}

function dependencyOf(write: PendingWrite): string {
  return write.type === 'retry' ? write.dependency : write.record.dependency;
}

/** The note without its pending outcome (the rerun count stays with the job); none when nothing is left. */
function withoutPending(note: JobNote | undefined): JobNote | undefined {
  if (!note) return undefined;
  const { pending: _pending, ...rest } = note;
  return rest.reruns === undefined ? undefined : rest;
}
