import { describe, expect, it } from 'vitest';
import {
  REPLAY_OPTION,
  replayJobCandidate,
  replayJobId,
  replayJobOptions,
  replayOrigin,
} from './dead-letter-ids.js';

describe('dead-letter ids', () => {
  it("derives a replay's job id from the record's id, so a reused job id gets a new one", () => {
    expect([replayJobId('42', 1, '17'), replayJobId('42', 1, '18'), replayJobId('doc-7', 3, '2')]).toEqual([
      '42-r1.17',
      '42-r1.18',
      'doc-7-r3.2',
    ]);
    expect(replayJobId('a:b', 1, '3')).toBe('a_b-r1.3');
  });

  it('tries the claimed id first, then numbered candidates in a fixed order', () => {
    expect([1, 2, 3].map((n) => replayJobCandidate('42-r1.17', n))).toEqual([
      '42-r1.17',
      '42-r1.17~2',
      '42-r1.17~3',
    ]);
  });

  it('reads the origin of a replayed job, and treats any other job as its own origin', () => {
    expect(
      replayOrigin({
        id: '42-r2.9',
        opts: { [REPLAY_OPTION]: { originalJobId: '42', replays: 2, recordId: '9', claimedAt: 5 } },
      }),
    ).toEqual({ originalJobId: '42', replays: 2, recordId: '9', claimedAt: 5 });
    expect(replayOrigin({ id: 'doc-1-r1', opts: {} })).toEqual({ originalJobId: 'doc-1-r1', replays: 0 });
    expect(replayOrigin({ id: '9', opts: { [REPLAY_OPTION]: { originalJobId: 9, replays: -1 } } })).toEqual({
      originalJobId: '9',
      replays: 0,
    });
  });

  it('replays with the original options, minus placement and scheduling, deduplicated under its own id', () => {
    const opts = replayJobOptions(
      {
        id: '17',
        jobId: '42',
        replays: 1,
        opts: {
          attempts: 5,
          backoff: { type: 'fixed', delay: 10 },
          priority: 2,
          removeOnComplete: true,
          jobId: '42-r1.3',
          delay: 5_000,
          repeat: { every: 1_000 },
          parent: { id: 'p', queue: 'bull:flows' },
          deduplication: { id: 'x' },
          [REPLAY_OPTION]: { originalJobId: '42', replays: 1 },
        },
      },
      { jobId: '42-r2.17', claimedAt: 1_000 },
      60_000,
    );
    expect(opts).toEqual({
      attempts: 5,
      backoff: { type: 'fixed', delay: 10 },
      priority: 2,
      removeOnComplete: true,
      jobId: '42-r2.17',
      deduplication: { id: '42-r2.17', ttl: 60_000 },
      [REPLAY_OPTION]: { originalJobId: '42', replays: 2, recordId: '17', claimedAt: 1_000 },
    });
  });
});
