import type { FixtureSpec } from '../helpers/fixture-project.js';

/**
 * The projects a user installs, as the install test and the matrix cells install them: stormguard
 * alone (the pure core) and beside each supported BullMQ major and backend driver.
 */
export const FIXTURES = {
  core: { name: 'core', packages: [] },
  bullmq5Redis: { name: 'bullmq5-redis', packages: ['bullmq@5', 'ioredis@5'] },
  bullmq6Redis: { name: 'bullmq6-redis', packages: ['bullmq@6', 'ioredis@6'] },
  // A fleet on BullMQ's PostgreSQL backend needs no Redis, so its project installs no ioredis.
  bullmq6Postgres: { name: 'bullmq6-postgres', packages: ['bullmq@6', 'pg@8'] },
} as const satisfies Record<string, FixtureSpec>;

/** The backend the end-to-end tests run on, as `STORMGUARD_TEST_BACKEND` names it. */
export type TestBackend = 'redis' | 'postgres';

/** A secondary cell of the test matrix: tests/e2e run inside a fixture project on one backend. */
export interface MatrixCell {
  readonly name: string;
  readonly fixture: FixtureSpec;
  readonly backend: TestBackend;
  /** The major versions the fixture must have installed, checked before the tests run. */
  readonly majors: Readonly<Partial<Record<'bullmq' | 'ioredis' | 'pg', number>>>;
  /**
   * End-to-end files that do not apply to this cell's backend, each with the reason. They are left out of
   * the cell's run by name (never skipped inside the file), so the cell's report stays free of skips.
   */
  readonly excludes?: readonly { readonly file: string; readonly why: string }[];
}

/**
 * The secondary cells. The primary cell, BullMQ 6 + ioredis 6 on Redis, is the repository itself: the
 * whole suite runs on its own dev dependencies.
 */
export const CELLS = {
  bullmq5Redis: {
    name: 'BullMQ 5 + ioredis 5 on Redis',
    fixture: FIXTURES.bullmq5Redis,
    backend: 'redis',
    majors: { bullmq: 5, ioredis: 5 },
  },
  bullmq6Postgres: {
    name: 'BullMQ 6 on PostgreSQL',
    fixture: FIXTURES.bullmq6Postgres,
    backend: 'postgres',
    majors: { bullmq: 6, pg: 8 },
  },
} as const satisfies Record<string, MatrixCell>;
