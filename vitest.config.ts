import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two cores: timing-sensitive tests (idle pickup latency) stay honest with one file at a time
    // per core, and the Redis under test gets the other.
    maxWorkers: 2,
    minWorkers: 1,
  },
});
