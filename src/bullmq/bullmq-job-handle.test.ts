import type { Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { bullmqJobHandle } from './bullmq-job-handle.js';
import { REPLAY_OPTION } from './dead-letter-ids.js';

/** The fields of a BullMQ job the handle reads, as BullMQ fills them. */
function job(opts: Record<string, unknown>): Job {
  return {
    id: '42-r1.17',
    name: 'reindex',
    data: { docId: 42 },
    opts,
    timestamp: 1_000,
    attemptsStarted: 1,
    attemptsMade: 0,
    stalledCounter: 0,
  } as unknown as Job;
}

describe('bullmqJobHandle', () => {
  it("reads a replayed job's lineage and trace links from its replay option", () => {
    const links = ['00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'];
    const handle = bullmqJobHandle(
      job({ [REPLAY_OPTION]: { originalJobId: '42', replays: 1, recordId: '17', traceLinks: links } }),
      'token',
      'index',
    );
    expect(handle.replays).toBe(1);
    expect(handle.replayedFrom).toBe('17');
    expect(handle.replayedTraceLinks).toEqual(links);
  });

  it('has none for a job never replayed', () => {
    const handle = bullmqJobHandle(job({ attempts: 3 }), 'token', 'index');
    expect(handle.replays).toBe(0);
    expect(handle.replayedFrom).toBeUndefined();
    expect(handle.replayedTraceLinks).toBeUndefined();
  });
});
