/**
 * Every ```sh block of README.md is either run by a test (which reads it from the README, so an edit
 * that breaks it fails that test) or listed here with the reason it is not. A new block, or a block
 * whose first line changed, fails here until it is given one or the other.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readmeBlocks } from '../support/readme.js';

type Coverage = { runBy: string } | { notRun: string };

/** Each block by its heading and the start of its first line. */
const BLOCKS: Array<{ heading: string; first: string; coverage: Coverage }> = [
  {
    heading: 'Quick start',
    first: 'npm install',
    // Its `npm start` runs; its `npm install` is what CI did before the suite.
    coverage: { runBy: 'test/readme-demo.test.ts' },
  },
  {
    heading: 'Quick start',
    first: 'npm run -s harness -- send demo "Research ComfyUI',
    coverage: { runBy: 'test/readme-demo.test.ts' },
  },
  {
    heading: 'See the agent act: a tool call that waits for approval',
    first: 'npx tsx examples/scripted-model/server.ts',
    coverage: { runBy: 'test/readme-demo.test.ts' },
  },
  {
    heading: 'See the agent act: a tool call that waits for approval',
    first: 'npm run -s harness -- send convert "Convert the Markdown guide',
    coverage: { runBy: 'test/readme-demo.test.ts' },
  },
  {
    heading: 'Call a Session from another agent (A2A)',
    first: "printf '# Notes",
    coverage: { runBy: 'test/readme-demo.test.ts' },
  },
  {
    heading: 'A chat front end on a Session (AG-UI)',
    first: "printf '# To do",
    coverage: { runBy: 'test/readme-demo.test.ts' },
  },
  {
    heading: 'Live events: the event stream, the gateway and the approval inbox',
    first: 'T=$(cat .data/gateway-token)',
    coverage: {
      notRun: 'needs a Session research-42 in a given state; the gateway routes are tested by test/gateway.test.ts',
    },
  },
  {
    heading: 'Live events: the event stream, the gateway and the approval inbox',
    first: 'npm run -s harness -- send research-42',
    coverage: { notRun: 'needs a Session research-42 in a given state' },
  },
  {
    heading: 'Tests',
    first: 'npm test',
    coverage: { notRun: 'these are the CI commands themselves' },
  },
  {
    heading: 'Performance',
    first: 'npm run bench',
    coverage: { notRun: 'minutes long; test/bench-smoke.test.ts runs the benchmarks at small sizes' },
  },
  {
    heading: 'Run in production',
    first: 'npm ci && npm run build',
    coverage: {
      notRun: 'the build runs before the suite (npm test); a worker from dist/ runs in test/production-worker.test.ts',
    },
  },
];

describe('README.md sh blocks', () => {
  const blocks = readmeBlocks();

  it('are each run by a test or listed with the reason they are not', () => {
    const unlisted = blocks.filter(
      (b) => !BLOCKS.some((entry) => entry.heading === b.heading && b.first.startsWith(entry.first)),
    );
    expect(
      unlisted.map((b) => `README.md:${b.line} under "${b.heading}": ${b.first}`),
      'add each to BLOCKS in this file',
    ).toEqual([]);
  });

  it('lists no block the README no longer has', () => {
    const stale = BLOCKS.filter(
      (entry) => !blocks.some((b) => b.heading === entry.heading && b.first.startsWith(entry.first)),
    );
    expect(stale).toEqual([]);
  });

  it('names test files that read their block from the README', () => {
    for (const entry of BLOCKS) {
      if (!('runBy' in entry.coverage)) continue;
      const source = readFileSync(join(import.meta.dirname, '..', '..', entry.coverage.runBy), 'utf8');
      expect(source, entry.coverage.runBy).toContain('readmeBlock(');
      expect(source, entry.coverage.runBy).toContain(entry.heading);
      expect(source, entry.coverage.runBy).toContain(entry.first.split(' "')[0]);
    }
  });
});
