import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'tests/**/*.test.ts'],
    testTimeout: 30_000,
    // Most test files wait on servers, brokers and timers, not on the CPU: three at a time on a 2-core
    // machine (Vitest's default there is one) keep the whole suite near 10 minutes instead of 20.
    maxWorkers: 3,
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
