import { defineConfig } from 'vitest/config';

/**
 * `npm run test:cluster`: Session scenarios on a self-hosted Temporal cluster on PostgreSQL with
 * several worker processes (test/cluster/). Kept apart from `npm test`, which runs on the dev server.
 */
export default defineConfig({
  test: {
    include: ['test/cluster/**/*.cluster.ts'],
    globalSetup: ['test/cluster/global-setup.ts'],
    pool: 'forks',
    // The scenarios share three worker processes on two cores: one file at a time.
    maxWorkers: 1,
    fileParallelism: false,
    testTimeout: 300_000,
    hookTimeout: 300_000,
    teardownTimeout: 60_000,
  },
});
