/**
 * What one cached Session costs in workflow heap, and how much it grows per input.
 *
 * The worker runs its workflows in this thread (the SDK's debug mode, with the same reusable V8
 * context a production worker's workflow thread uses), so `v8.getHeapStatistics()` after a full GC
 * sees their heap. The bench opens N Sessions with a conversation of `--inputs` messages each
 * (the goal, then `Continue`s, on the offline LocalModels), reads the heap, opens N more the same
 * way and reads it again: the difference over N is one cached Session, with everything shared
 * (the SDK, the worker, the scoring threads' clients) cancelled out. Then it sends the first N
 * Sessions `--inputs` more messages each: the growth over N × inputs is the cost of one input to a
 * cached Session before continue-as-new.
 *
 * Two readings of each: the thread's whole used heap, and what V8 attributes to the other contexts
 * than the main one (`vm.measureMemory`), which here is the workflows' reusable context alone: the
 * worker's own per-input state (event feed, clients) is in the first and not in the second.
 *
 *     npx tsx bench/session-heap.ts --sessions 20 --inputs 10
 */
import { setFlagsFromString } from 'node:v8';
import { getHeapStatistics } from 'node:v8';
import { measureMemory, runInNewContext } from 'node:vm';
import { Command } from 'commander';
import { isEntryPoint } from '../worker/entry-point.js';
import { FLAVORS, TEXT, decided, send, start, type Driven } from './driver.js';
import { startStack, type Stack } from './stack.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

export interface SessionHeapResult {
  sessions: number;
  inputs: number;
  /** Heap of one cached Session after its conversation, in bytes. */
  perSessionBytes: number;
  /** Heap growth of a cached Session per further input, in bytes. */
  perInputBytes: number;
  /** The same two, from the workflow context's share of the heap alone (`vm.measureMemory`). */
  contextPerSessionBytes: number;
  contextPerInputBytes: number;
  /** Heap in use after each step, in bytes. */
  heap: { base: number; first: number; second: number; more: number };
}

interface Reading {
  heap: number;
  /** What V8 attributes to contexts other than the main one: the workflow context. */
  context: number;
}

/** Used heap after a full collection (repeated: finalizers and weak callbacks free more). */
async function settledHeap(): Promise<Reading> {
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 50));
  }
  const heap = getHeapStatistics().used_heap_size;
  const measured = await measureMemory({ mode: 'detailed', execution: 'eager' });
  const others = (measured as { other?: Array<{ jsMemoryEstimate: number }> }).other ?? [];
  return { heap, context: others.reduce((sum, c) => sum + c.jsMemoryEstimate, 0) };
}

async function converse(stack: Stack, sessions: Driven[], inputs: number, first: boolean): Promise<void> {
  // A few at a time: the point is the heap they leave, not throughput.
  const batch = 8;
  for (let i = 0; i < sessions.length; i += batch) {
    await Promise.all(
      sessions.slice(i, i + batch).map(async (d) => {
        for (let n = 0; n < inputs; n++) {
          const text = first && n === 0 ? TEXT.goal : TEXT.continue;
          await decided(d, await send(d, text));
        }
      }),
    );
  }
}

async function open(stack: Stack, count: number, inputs: number): Promise<Driven[]> {
  const sessions: Driven[] = [];
  for (let i = 0; i < count; i++) sessions.push(await start(stack.client, stack.taskQueue, FLAVORS.session));
  await converse(stack, sessions, inputs, true);
  return sessions;
}

/** Measures heap per cached Session and per input on an own dev server. */
export async function sessionHeap(sessions: number, inputs: number): Promise<SessionHeapResult> {
  const stack = await startStack({ debugMode: true });
  try {
    // One Session first, so everything evaluated once per worker (the bundle, shared modules) is in the base.
    await open(stack, 1, inputs);
    const base = await settledHeap();
    const firstSet = await open(stack, sessions, inputs);
    const first = await settledHeap();
    await open(stack, sessions, inputs);
    const second = await settledHeap();
    await converse(stack, firstSet, inputs, false);
    const more = await settledHeap();
    return {
      sessions,
      inputs,
      perSessionBytes: Math.round((second.heap - first.heap) / sessions),
      perInputBytes: Math.round((more.heap - second.heap) / (sessions * inputs)),
      contextPerSessionBytes: Math.round((second.context - first.context) / sessions),
      contextPerInputBytes: Math.round((more.context - second.context) / (sessions * inputs)),
      heap: { base: base.heap, first: first.heap, second: second.heap, more: more.heap },
    };
  } finally {
    await stack.stop();
  }
}

if (isEntryPoint(import.meta.url)) {
  const program = new Command('session-heap')
    .option('--sessions <n>', 'Sessions per step', (v) => Number(v), 20)
    .option('--inputs <n>', 'inputs per conversation', (v) => Number(v), 10)
    .action(async (opts: { sessions: number; inputs: number }) => {
      const result = await sessionHeap(opts.sessions, opts.inputs);
      const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
      process.stdout.write(
        `${result.sessions} Sessions × ${result.inputs} inputs, workflow heap (debug mode, reusable V8 context)\n` +
          `  per cached Session: ${kib(result.perSessionBytes)} (workflow context alone: ${kib(result.contextPerSessionBytes)})\n` +
          `  per further input:  ${kib(result.perInputBytes)} (workflow context alone: ${kib(result.contextPerInputBytes)})\n` +
          `  heap MiB: base ${(result.heap.base / 2 ** 20).toFixed(1)}, +N ${(result.heap.first / 2 ** 20).toFixed(1)}, ` +
          `+2N ${(result.heap.second / 2 ** 20).toFixed(1)}, +inputs ${(result.heap.more / 2 ** 20).toFixed(1)}\n`,
      );
    });
  await program.parseAsync();
}
