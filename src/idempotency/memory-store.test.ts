import { FakeClock } from '../common/clock.js';
import { MemoryIdempotencyStore } from './memory-store.js';
import { idempotencyStoreCases } from './store.case.js';

idempotencyStoreCases('MemoryIdempotencyStore', async () => {
  const clock = new FakeClock(1_700_000_000_000);
  return {
    store: new MemoryIdempotencyStore({ clock }),
    elapse: async (_key, ms) => void clock.advance(ms),
    close: async () => {},
  };
});
