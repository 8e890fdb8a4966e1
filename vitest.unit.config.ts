import { defineConfig } from 'vitest/config';

/**
 * `npm run test:unit`: test/unit/ alone, without the global setup (no Temporal dev server, no
 * workflow bundle), so it finishes in seconds. `npm test` runs these files too, with everything else.
 */
export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    // These files are pure and share no state, so each worker reuses its loaded modules across files:
    // the offline models' word vectors and NLP model load once per worker, not once per file (half
    // the CPU time).
    isolate: false,
    // Generous for a 2-core machine shared with other work; the slowest test takes about 3 s alone.
    testTimeout: 60_000,
  },
});
