/**
 * The import rules of design §8, checked by `npm run lint` (scripts/check-imports.mjs).
 *
 * - A part imports only the parts listed above it in §8's layout (LAYERS, top first). `audit` sits beside
 *   `breaker`, which may use it. index.ts files (the entry points, which re-export) are exempt from the order.
 * - Adapters (bullmq, amqp), stores (redis, postgres) and sinks (prometheus, opentelemetry) never import each
 *   other; only the composition roots, the CLI and the console, import them. No exception: the BullMQ
 *   adapter's zero-config dead-letter default loads the package's public `stormguard/redis` entry point
 *   at run time, as a user's code does, and never imports src/redis.
 * - The policy is pure: no I/O module and no package but zod outside its tests.
 * - No cycles.
 *
 * Type-only imports count: every rule sees them (tsPreCompilationDeps).
 */

/** §8's parts, top first: each may import only those listed before it. */
const LAYERS = [
  'errors',
  'common',
  'policy',
  'config',
  'budget',
  'audit', // beside breaker, which may use it
  'breaker',
  'idempotency',
  'runtime',
  'store-kit', // an index.ts over budget, breaker and runtime
  'status',
  'metrics',
  'redis',
  'postgres',
  'bullmq',
  'amqp',
  'prometheus',
  'opentelemetry',
  'sim',
  'dashboard',
  'testing',
  'cli',
];

const ADAPTERS_STORES_SINKS = ['bullmq', 'amqp', 'redis', 'postgres', 'prometheus', 'opentelemetry'];
const COMPOSITION_ROOTS = ['cli', 'dashboard'];
const INDEX = '(^|/)index\\.ts$';

const folders = (names) => `^src/(${names.join('|')})/`;

/**
 * Violations tolerated for now, file by file, each with what removes it: { rule, from, to, why } for an
 * import, { rule: 'no-circular', cycle: [files…], why } for a cycle. scripts/check-imports.mjs lists them on
 * every run, and fails when one is no longer found, so a finished move removes its entry. Empty means none.
 */
const TEMPORARY_EXCEPTIONS = [];

const knownViolations = TEMPORARY_EXCEPTIONS.map(({ rule, from, to, cycle }) =>
  cycle
    ? {
        type: 'cycle',
        from: cycle[0],
        to: cycle[1],
        cycle: cycle.map((name) => ({ name })),
        rule: { name: rule, severity: 'error' },
      }
    : { type: 'dependency', from, to, rule: { name: rule, severity: 'error' } },
);

const upward = LAYERS.map((layer, i) => ({
  name: `no-upward-from-${layer}`,
  comment: `src/${layer} imports only parts above it in design §8: ${LAYERS.slice(0, i).join(', ') || 'none'}`,
  severity: 'error',
  from: { path: `^src/${layer}/`, pathNot: INDEX },
  to: { path: folders(LAYERS.slice(i + 1)) },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-adapter-store-sink-crossing',
      comment:
        'Adapters, stores and sinks never import each other (design §8); they meet only in the CLI, the console and the user’s code',
      severity: 'error',
      from: { path: folders(ADAPTERS_STORES_SINKS) },
      to: { path: folders(ADAPTERS_STORES_SINKS), pathNot: '^src/$1/' },
    },
    {
      name: 'only-composition-roots-compose',
      comment: 'Only the CLI and the console import adapters, stores and sinks (design §8)',
      severity: 'error',
      from: { path: '^src/', pathNot: folders([...COMPOSITION_ROOTS, ...ADAPTERS_STORES_SINKS]) },
      to: { path: folders(ADAPTERS_STORES_SINKS) },
    },
    ...upward,
    {
      name: 'policy-is-pure',
      comment: 'src/policy does no I/O: no I/O module and no package but zod (its tests excepted)',
      severity: 'error',
      from: { path: '^src/policy/', pathNot: '\\.test\\.ts$' },
      to: {
        dependencyTypes: ['core'],
        path: '^(node:)?(fs|net|http|https|http2|child_process|cluster|dgram|dns|tls|worker_threads|readline|process)(/|$)',
      },
    },
    {
      name: 'policy-uses-only-zod',
      comment: 'src/policy does no I/O: no package but zod (its tests excepted)',
      severity: 'error',
      from: { path: '^src/policy/', pathNot: '\\.test\\.ts$' },
      to: { dependencyTypesNot: ['local', 'core'], pathNot: '(^|/)node_modules/zod/' },
    },
    {
      name: 'folder-not-in-layout',
      comment:
        'Every folder under src/ is a part of design §8’s layout (add a new one to LAYERS in its place)',
      severity: 'error',
      from: { path: '^src/', pathNot: `${folders(LAYERS)}|^src/index\\.ts$` },
      to: {},
    },
    {
      name: 'no-circular',
      comment: 'No import cycles, type-only ones included',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'An import that resolves to no file',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/dashboard/web/' },
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    knownViolations,
  },
};
