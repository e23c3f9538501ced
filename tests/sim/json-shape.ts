/** The fields of each strategy in `stormguard simulate --json`, in order: the shape users script against. */
export const STRATEGY_JSON_FIELDS = [
  'name',
  'jobs',
  'completed',
  'completedWithoutReplay',
  'deadLettered',
  'lost',
  'unfinished',
  'requests',
  'refused',
  'queueOps',
  'peakRetriesPerSecond',
  'drainMs',
];
