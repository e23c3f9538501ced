import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'tests/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // The CLI tests run dist/: a stale build is rebuilt first (cheap when fresh: an mtime walk over src/).
    globalSetup: [
      './tests/helpers/dist-global-setup.ts',
      './tests/helpers/postgres-global-setup.ts',
      './tests/helpers/rabbitmq-global-setup.ts',
    ],
    reporters: ['default', './tests/helpers/summary-reporter.ts'],
  },
});
