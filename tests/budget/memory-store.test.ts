import { MemoryBudgetStore } from '../../src/budget/memory-store.js';
import { describeBudgetStore } from '../../src/budget/store.case.js';

describeBudgetStore('MemoryBudgetStore', (clock) => new MemoryBudgetStore({ clock }), { propertyRuns: 10 });
