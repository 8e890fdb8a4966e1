import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    // Two cores: one test file per core, each with its own worker against the shared dev server.
    maxWorkers: 2,
    testTimeout: 120_000,
    hookTimeout: 180_000,
    teardownTimeout: 30_000,
    // expect.poll waits 1 s by default: too short for a browser page or a worker on a loaded
    // two-core machine (the inbox page's first fetch took longer than that beside six other jobs).
    expect: { poll: { timeout: 15_000 } },
  },
});
