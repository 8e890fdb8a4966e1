/**
 * `npx tsx bench/hold-sessions.ts --sessions 1500 --heap-mib 1024`: issue 37's done-when as a script,
 * not a timed test. The worker runs as `npm start` builds it (createSessionWorker, its sticky cache
 * sized from the heap limit, nothing set), as a process of its own with
 * `--max-old-space-size=<heap-mib>` (bench/capacity-worker.ts, offline local provider), against its
 * own dev server. It opens N Sessions with one input each (the goal: an initialize, agent turn off so
 * that an input is cheap), then sends the oldest Session, long evicted, one more input and waits for
 * its turn to finish. It prints the cache the worker chose, the workflow thread's heap after a full
 * collection before and after, and the worker's RSS; it exits 1 if the worker died or the oldest
 * Session did not answer.
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Command } from 'commander';
import { embeddedStack, mib, startWorker, timedInput } from './capacity-scenario.js';
import { FLAVORS, TEXT, start, type Driven } from './driver.js';
import { pool } from './stats.js';

const program = new Command()
  .option('--sessions <n>', 'Sessions to open', '1500')
  .option('--heap-mib <n>', "the worker's --max-old-space-size", '1024')
  .option('--concurrency <n>', 'Sessions opened at a time', '8')
  .parse();
const opts = program.opts<{ sessions: string; heapMib: string; concurrency: string }>();
const n = Number(opts.sessions);
const heapMib = Number(opts.heapMib);

const namespace = 'default';
const stack = await embeddedStack(namespace);
const { client, taskQueue } = stack;
const worker = await startWorker({ ...stack.env, NODE_OPTIONS: `--max-old-space-size=${heapMib}` });
let ok = false;
try {
  console.log(
    `load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}; ${worker.ready.line}`,
  );
  const before = await worker.heap();
  const t0 = performance.now();
  let opened = 0;
  const sessions: Driven[] = await pool(Array.from({ length: n }), Number(opts.concurrency), async () => {
    const d = await start(client, taskQueue, FLAVORS.session, { agentTurn: false });
    await timedInput(worker, d, TEXT.goal);
    if (++opened % 250 === 0)
      console.log(`  ${opened} Sessions open (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
    return d;
  });
  const held = await worker.heap();
  const oldest = sessions[0] as Driven;
  const ms = await timedInput(worker, oldest, TEXT.continue);
  const after = await worker.heap();
  console.log(
    [
      `${n} Sessions open, cache ${worker.ready.cacheSize}, heap limit ${mib(worker.ready.heapLimitBytes)} MiB`,
      `workflow-thread heap (after a full GC): ${mib(before.usedBytes)} MiB before, ${mib(held.usedBytes)} MiB with ${n} open, ${mib(after.usedBytes)} MiB after the oldest answered`,
      `worker RSS: ${mib(before.rssBytes)} → ${mib(after.rssBytes)} MiB`,
      `the oldest Session (${oldest.handle.workflowId}) answered a later input in ${ms.toFixed(0)} ms`,
      `load average ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}`,
    ].join('\n'),
  );
  ok = true;
} finally {
  await worker.stop();
  await stack.stop();
}
process.exit(ok ? 0 : 1);
