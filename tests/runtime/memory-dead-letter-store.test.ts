import { describeDeadLetterStore } from '../../src/runtime/dead-letter-store.case.js';
import { MemoryDeadLetterStore } from '../../src/runtime/memory-dead-letter-store.js';

describeDeadLetterStore('MemoryDeadLetterStore', async (clock) => {
  const store = new MemoryDeadLetterStore({ clock });
  return {
    store,
    damage: async (queue, id) => store.overwriteRecordText(queue, id, '{"jobId":42}'),
    close: async () => {},
  };
});
