import type { StoredDeadLetter } from '../runtime/contracts.js';

/**
 * The key a record's next replay is claimed under, and its message's job id (and `messageId` when the
 * producer set none): `<job id>-r<replay>.<record id>`, unique per record and per replay.
 *
 * @example
 * amqpReplayKey({ id: '17', jobId: 'a1b2', replays: 0 }); // 'a1b2-r1.17'
 */
export function amqpReplayKey(record: Pick<StoredDeadLetter, 'id' | 'jobId' | 'replays'>): string {
  return `${record.jobId}-r${record.replays + 1}.${record.id}`;
}
