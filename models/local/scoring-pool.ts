/**
 * A fixed-size pool of worker threads that run the local provider's roles (local-roles.ts), so that
 * analysing a message never holds the worker's main thread, where Temporal's workflow tasks,
 * heartbeats and every other Session's activities run. Written on node:worker_threads because no
 * pool library is installed (piscina would replace it one for one).
 *
 * Each thread runs one task at a time; tasks wait in one queue, first in first out. A task that
 * outlives its call's time budget, or whose call is cancelled while it runs, terminates its thread
 * (a synchronous computation cannot be interrupted otherwise) and a fresh thread takes its place.
 * Idle threads do not keep the process alive.
 */
import { availableParallelism } from 'node:os';
import { FAILURE } from '../../contract/failures.js';
import { Worker } from 'node:worker_threads';
import { ApplicationFailure } from '@temporalio/common';
import type { CallOptions } from '../roles.js';
import type { LocalRoleResults, LocalRoleSettings, LocalRoleTask } from './local-roles.js';
import type { ThreadReply, ThreadRequest } from './scoring-thread.js';

/** Threads when none are configured: one per core but one (left to the main thread), at most 4. */
export function defaultScoringThreads(): number {
  return Math.max(1, Math.min(4, availableParallelism() - 1));
}

interface Job {
  id: number;
  task: LocalRoleTask;
  settings: LocalRoleSettings;
  call: CallOptions | undefined;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

interface Slot {
  thread: Worker;
  job: Job | undefined;
  timer: NodeJS.Timeout | undefined;
  onAbort: (() => void) | undefined;
}

// Built (dist/), the thread is plain .js; run from source (tsx, vitest) it starts from a script that
// registers tsx's loader in the thread first.
const THREAD_FILE = new URL(
  import.meta.url.endsWith('.ts') ? './scoring-thread-from-source.mjs' : './scoring-thread.js',
  import.meta.url,
);

/** Why a call was cancelled, as an Error (Temporal's cancellation reason already is one). */
function reasonOf(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason ?? 'cancelled'));
}

export class ScoringPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;

  /** `size` threads are started at once, so their models load before the first message. */
  constructor(readonly size: number = defaultScoringThreads()) {
    if (!Number.isInteger(size) || size < 1)
      throw new RangeError(`a scoring pool needs at least 1 thread, got ${size}`);
    for (let i = 0; i < size; i++) this.slots.push(this.startSlot());
  }

  /** Thread ids of the pool's threads (tests use them to see that work left the main thread). */
  threadIds(): number[] {
    return this.slots.map((s) => s.thread.threadId);
  }

  /** Runs one local role on a pool thread. */
  run<T extends LocalRoleTask>(
    task: T,
    settings: LocalRoleSettings,
    call?: CallOptions,
  ): Promise<LocalRoleResults[T['role']]> {
    if (this.closed) return Promise.reject(new Error('the scoring pool is closed'));
    if (call?.signal?.aborted) return Promise.reject(reasonOf(call.signal));
    return new Promise((resolve, reject) => {
      const job: Job = { id: this.nextId++, task, settings, call, resolve: resolve, reject };
      const signal = call?.signal;
      if (signal) {
        // Cancelled while waiting: leave the queue. Cancelled while running: see dispatch().
        signal.addEventListener(
          'abort',
          () => {
            const at = this.queue.indexOf(job);
            if (at >= 0) {
              this.queue.splice(at, 1);
              reject(reasonOf(signal));
            }
          },
          { once: true },
        );
      }
      this.queue.push(job);
      this.dispatch();
    });
  }

  /** Terminates every thread; waiting and running tasks fail. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const closing = new Error('the scoring pool is closed');
    for (const job of this.queue.splice(0)) job.reject(closing);
    await Promise.all(
      this.slots.map((slot) => {
        if (slot.job) this.finish(slot)?.reject(closing);
        return slot.thread.terminate();
      }),
    );
  }

  private startSlot(): Slot {
    const thread = new Worker(THREAD_FILE);
    thread.unref();
    const slot: Slot = { thread, job: undefined, timer: undefined, onAbort: undefined };
    thread.on('message', (reply: ThreadReply) => {
      if (slot.job?.id !== reply.id) return;
      const job = this.finish(slot);
      if (!job) return;
      if (reply.ok) job.resolve(reply.value);
      else job.reject(new Error(`local ${job.task.role} failed: ${reply.message}`));
      this.dispatch();
    });
    thread.on('error', (err) => this.replace(slot, err));
    thread.on('exit', (code) => {
      if (!this.closed) this.replace(slot, new Error(`a scoring thread exited with code ${code}`));
    });
    return slot;
  }

  /** Clears the slot's job and its timers, ref-counting the thread only while it works. */
  private finish(slot: Slot): Job | undefined {
    const job = slot.job;
    if (slot.timer) clearTimeout(slot.timer);
    if (slot.onAbort) job?.call?.signal?.removeEventListener('abort', slot.onAbort);
    slot.job = undefined;
    slot.timer = undefined;
    slot.onAbort = undefined;
    slot.thread.unref();
    return job;
  }

  /** Fails the slot's job with `err` and puts a fresh thread in its place. */
  private replace(slot: Slot, err: unknown): void {
    const at = this.slots.indexOf(slot);
    if (at < 0) return;
    this.finish(slot)?.reject(err);
    slot.thread.removeAllListeners();
    void slot.thread.terminate();
    if (this.closed) return;
    this.slots[at] = this.startSlot();
    this.dispatch();
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (slot.job) continue;
      const job = this.queue.shift();
      if (!job) return;
      slot.job = job;
      slot.thread.ref();
      const { call } = job;
      // setTimeout fires at once for delays beyond 2^31 - 1 ms; such a budget means "no limit".
      if (call && call.timeoutMs < 2 ** 31) {
        slot.timer = setTimeout(
          () =>
            this.replace(
              slot,
              ApplicationFailure.retryable(
                `local ${job.task.role} took longer than ${call.timeoutMs} ms`,
                FAILURE.ModelTimeout,
              ),
            ),
          call.timeoutMs,
        );
        slot.timer.unref();
      }
      if (call?.signal) {
        const signal = call.signal;
        slot.onAbort = () => this.replace(slot, reasonOf(signal));
        signal.addEventListener('abort', slot.onAbort, { once: true });
      }
      slot.thread.postMessage({ id: job.id, task: job.task, settings: job.settings } satisfies ThreadRequest);
    }
  }
}
