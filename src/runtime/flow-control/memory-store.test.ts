import { MemoryFlowStore } from './memory-store.js';
import { flowStoreCases } from './store.case.js';

flowStoreCases('MemoryFlowStore', async (clock, connections) => {
  const store = new MemoryFlowStore({ clock });
  return { stores: Array.from({ length: connections }, () => store), close: async () => {} };
});
