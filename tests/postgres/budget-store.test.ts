import { describeBudgetStore } from '../../src/budget/store.case.js';
import { PostgresBudgetStore } from '../../src/postgres/budget-store.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';

const bed = postgresBed();

describeBudgetStore(
  'PostgresBudgetStore',
  (clock) => new PostgresBudgetStore({ connection: bed.url, schema: uniqueSchema(), clock }),
  { propertyRuns: 2, windowPropertyRuns: 25 },
);
