import { defineConfig } from 'vitest/config';

/**
 * `npm run test:faults`: the fault suite (test/faults/). Each scenario kills real processes (workers,
 * the dev server) or floods one Session, so files run one at a time: a kill must not land in another
 * scenario's run, and two cores are shared with whatever else runs. Kept apart from `npm test`.
 */
export default defineConfig({
  test: {
    include: ['test/faults/**/*.fault.ts'],
    globalSetup: ['test/faults/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    testTimeout: 900_000,
    hookTimeout: 300_000,
    teardownTimeout: 60_000,
  },
});
