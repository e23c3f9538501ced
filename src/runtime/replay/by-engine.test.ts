import { describe, expect, it } from 'vitest';
import type { StoredDeadLetter } from '../contracts.js';
import { sampleDeadLetter } from '../dead-letter-store.case.js';
import { engineOf, replayQueueByEngine } from './by-engine.js';
import type { ReplayQueue } from './replay-queue.js';

/** A port that records what it was handed, keyed `<tag>:<job id>`. */
function recording(tag: string, into: string[]): ReplayQueue {
  return {
    replayKey: (record) => `${tag}:${record.jobId}`,
    putBack: async (record) => {
      into.push(`${tag} ${record.id}`);
      return `${tag}:${record.jobId}`;
    },
  };
}

function stored(id: string, engine?: string): StoredDeadLetter {
  return { ...sampleDeadLetter(`job-${id}`), id, opts: engine ? { engine } : {} };
}

const claim = { jobId: 'k', claimedAt: 1 };
const options = { dedupTtlMs: 1_000 };

describe('replayQueueByEngine', () => {
  it('puts each record back through the engine that filed it', async () => {
    const moved: string[] = [];
    const jobs = replayQueueByEngine(
      { bullmq: () => recording('bull', moved), amqp: () => recording('rabbit', moved) },
      () => 'unused',
      (record) => `key:${record.jobId}`,
    );
    await jobs.putBack(stored('1'), claim, options);
    await jobs.putBack(stored('2', 'amqp'), claim, options);
    expect(moved).toEqual(['bull 1', 'rabbit 2']);
    expect(jobs.replayKey({ id: '2', jobId: 'j', replays: 0 })).toBe('key:j');
  });

  it('refuses a record of an engine it was not given, saying how to replay it, and moves nothing', async () => {
    const moved: string[] = [];
    const jobs = replayQueueByEngine(
      { bullmq: () => recording('bull', moved) },
      (engine) => `give --${engine}`,
      (record) => record.jobId,
    );
    await expect(jobs.putBack(stored('7', 'amqp'), claim, options)).rejects.toThrow(
      'dead letter 7 was filed by a RabbitMQ consumer: give --amqp',
    );
    expect(moved).toEqual([]);
  });

  it('opens a port only when a record needs it, once', async () => {
    let opened = 0;
    const jobs = replayQueueByEngine(
      {
        bullmq: () => {
          opened++;
          return recording('bull', []);
        },
      },
      () => 'unused',
      (record) => record.jobId,
    );
    expect(jobs.replayKey({ id: '1', jobId: 'j', replays: 0 })).toBe('j');
    expect(opened).toBe(0);
    await jobs.putBack(stored('1'), claim, options);
    await jobs.putBack(stored('2'), claim, options);
    expect(opened).toBe(1);
  });

  it('tells engines by the record: amqp when its opts say so, BullMQ otherwise', () => {
    expect(engineOf({ opts: { engine: 'amqp' } })).toBe('amqp');
    expect(engineOf({ opts: {} })).toBe('bullmq');
  });
});
