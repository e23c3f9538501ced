import { describe, expect, it } from 'vitest';
import {
  deadLetterJobId,
  REPLAY_OPTION,
  replayJobId,
  replayJobOptions,
  replayOrigin,
} from './dead-letter-ids.js';

describe('dead-letter ids', () => {
  it('prefixes the dead-letter id, so BullMQ integer ids become valid custom ids', () => {
    expect(deadLetterJobId('42')).toBe('dl-42');
    expect(`${Number.parseInt(deadLetterJobId('42'), 10)}`).not.toBe(deadLetterJobId('42'));
  });

  it('numbers replays from the original id', () => {
    expect([replayJobId('42', 1), replayJobId('doc-7', 3)]).toEqual(['42-r1', 'doc-7-r3']);
  });

  it('reads the origin of a replayed job, and treats any other job as its own origin', () => {
    expect(
      replayOrigin({ id: '42-r2', opts: { [REPLAY_OPTION]: { originalJobId: '42', replays: 2 } } }),
    ).toEqual({
      originalJobId: '42',
      replays: 2,
    });
    expect(replayOrigin({ id: 'doc-1-r1', opts: {} })).toEqual({ originalJobId: 'doc-1-r1', replays: 0 });
    expect(replayOrigin({ id: '9', opts: { [REPLAY_OPTION]: { originalJobId: 9, replays: -1 } } })).toEqual({
      originalJobId: '9',
      replays: 0,
    });
  });

  it('replays with the original options, minus placement and scheduling, under the next replay id', () => {
    const opts = replayJobOptions({
      jobId: '42',
      replays: 1,
      opts: {
        attempts: 5,
        backoff: { type: 'fixed', delay: 10 },
        priority: 2,
        removeOnComplete: true,
        jobId: '42-r1',
        delay: 5_000,
        repeat: { every: 1_000 },
        parent: { id: 'p', queue: 'bull:flows' },
        deduplication: { id: 'x' },
        [REPLAY_OPTION]: { originalJobId: '42', replays: 1 },
      },
    });
    expect(opts).toEqual({
      attempts: 5,
      backoff: { type: 'fixed', delay: 10 },
      priority: 2,
      removeOnComplete: true,
      jobId: '42-r2',
      [REPLAY_OPTION]: { originalJobId: '42', replays: 2 },
    });
  });
});
