import { MemoryBreakerStore } from '../../src/breaker/memory-store.js';
import { breakerStoreCases } from '../../src/breaker/store.case.js';

breakerStoreCases('MemoryBreakerStore', async (clock, connections) => {
  const store = new MemoryBreakerStore({ clock });
  return { stores: Array.from({ length: connections }, () => store), close: async () => {} };
});
