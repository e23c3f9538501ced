/**
 * The RabbitMQ game day (see gameday/scenario.ts): 300 messages through three consumer processes while
 * search is down for 8 s, the budget's Redis is killed for 3 s and one consumer is SIGKILLed in the middle
 * of a message; then the dead letters are replayed and consumed. Nothing is lost, no side effect happens
 * twice, and the retries that reach the down dependency stay within the budget's bound (design §3).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureRabbitVhost } from '../helpers/rabbitmq.js';
import { runGameDay } from './gameday/scenario.js';

beforeAll(async () => {
  // The broker is up and the run's vhost exists; the game day then works in a vhost of its own.
  await ensureRabbitVhost();
}, 60_000);

describe('RabbitMQ game day: outage, a Redis crash and a killed consumer', () => {
  it('loses nothing, duplicates no side effect, keeps retries to the down dependency within the budget, and leaves no dead letter after the replay', {
    timeout: 120_000,
  }, async () => {
    const report = await runGameDay({ messages: 300 });
    process.stdout.write(`amqp game day: ${JSON.stringify(report)}\n`);

    expect(report.lost).toEqual([]);
    expect(report.duplicated).toEqual([]);
    expect(report.searchedTwice).toEqual([]);
    expect(report.completedAndDeadLettered).toBe(0);
    // The killed process held this message's side effect: it was never committed, then ran once elsewhere.
    expect(report.killedMidMessage.ledger).toBe(1);
    // Bound computed from the configured ratio and floor and the successes search itself counted.
    expect(report.retriesWhileDown).toBeLessThanOrEqual(report.retryBound);
    // The chaos really happened: search refused calls, the budget ran degraded, there was something to replay.
    expect(report.callsWhileDown).toBeGreaterThan(0);
    expect(report.degradedProcesses).toBeGreaterThan(0);
    expect(report.replayed).toBeGreaterThan(0);
    expect(report.replayFailed).toBe(0);
    expect(report.deadLettersLeft).toBe(0);
    expect(report.leftInQueue).toBe(0);
    expect(report.leftInBuckets).toBe(0);
    expect(report.wallMs).toBeLessThan(45_000);
  });
});
