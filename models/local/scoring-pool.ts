/**
 * The pool of worker threads (piscina) that runs the local provider's roles (local-roles.ts), so that
 * analysing a message never holds the worker's main thread, where Temporal's workflow tasks,
 * heartbeats and every other Session's activities run.
 *
 * Each thread runs one task at a time; tasks wait in piscina's queue, first in first out. A waiting
 * task whose call is cancelled leaves the queue; a running one that outlives its call's time budget
 * or is cancelled ends its thread (a synchronous computation cannot be interrupted otherwise) and
 * piscina starts a fresh one. Idle threads do not keep the process alive.
 */
import { availableParallelism } from 'node:os';
import { ApplicationFailure } from '@temporalio/common';
import { Piscina } from 'piscina';
import { FAILURE } from '../../contract/failures.js';
import type { CallOptions } from '../roles.js';
import type { LocalRoleResults, LocalRoleSettings, LocalRoleTask } from './local-roles.js';
import type { ScoringRequest } from './scoring-thread.js';

/** Threads when none are configured: one per core but one (left to the main thread), at most 4. */
export function defaultScoringThreads(): number {
  return Math.max(1, Math.min(4, availableParallelism() - 1));
}

// Built (dist/), the thread is plain .js; run from source (tsx, vitest) it starts from a script that
// registers tsx's loader in the thread first.
const THREAD_FILE = new URL(
  import.meta.url.endsWith('.ts') ? './scoring-thread-from-source.mjs' : './scoring-thread.js',
  import.meta.url,
).href;

const closedError = () => new Error('the scoring pool is closed');

export class ScoringPool {
  private readonly pool: Piscina<ScoringRequest, unknown>;
  private closed = false;

  /** `size` threads are started at once, so their models load before the first message. */
  constructor(readonly size: number = defaultScoringThreads()) {
    if (!Number.isInteger(size) || size < 1)
      throw new RangeError(`a scoring pool needs at least 1 thread, got ${size}`);
    this.pool = new Piscina({ filename: THREAD_FILE, minThreads: size, maxThreads: size });
    // piscina emits 'error' when an idle thread dies (its file fails to load, say): unheard, that
    // would end the worker process. The task that needs the thread fails on its own and is retried.
    this.pool.on('error', (err: unknown) => {
      console.error(`scoring pool: a thread failed: ${err instanceof Error ? err.message : String(err)}`);
    });
  }

  /**
   * Resolves once every thread has loaded its models (the thread file warms them at load, see
   * scoring-thread.ts): one trivial task per thread, all at once, so each idle thread takes one. A
   * worker awaits this before it polls, so the first message does not pay for the load.
   */
  async ready(): Promise<void> {
    if (this.closed) throw closedError();
    const task: LocalRoleTask = {
      role: 'relevance',
      request: { message: { text: 'ready', resources: [] }, phaseGoal: 'ready', sessionGoal: '' },
    };
    const settings: LocalRoleSettings = {
      maxTerms: 1,
      orchestration: { floor: 1, perKind: 0 },
      summary: { maxSentences: 0, maxWords: 0 },
    };
    await Promise.all(Array.from({ length: this.size }, () => this.pool.run({ task, settings })));
  }

  /** Thread ids of the pool's threads (tests use them to see that work left the main thread). */
  threadIds(): number[] {
    return this.pool.threads.map((t) => t.threadId);
  }

  /** Runs one local role on a pool thread. */
  async run<T extends LocalRoleTask>(
    task: T,
    settings: LocalRoleSettings,
    call?: CallOptions,
  ): Promise<LocalRoleResults[T['role']]> {
    if (this.closed) throw closedError();
    // One signal for piscina whose reason is the error the call ends with: the time budget's failure
    // or the caller's cancellation reason.
    const abort = new AbortController();
    const onCancel = () => abort.abort(call?.signal?.reason);
    if (call?.signal?.aborted) onCancel();
    call?.signal?.addEventListener('abort', onCancel, { once: true });
    // setTimeout fires at once for delays beyond 2^31 - 1 ms; such a budget means "no limit".
    const timer =
      call && call.timeoutMs < 2 ** 31
        ? setTimeout(() => {
            const message = `local ${task.role} took longer than ${call.timeoutMs} ms`;
            abort.abort(ApplicationFailure.retryable(message, FAILURE.ModelTimeout));
          }, call.timeoutMs).unref()
        : undefined;
    try {
      return (await this.pool.run({ task, settings }, { signal: abort.signal })) as LocalRoleResults[T['role']];
    } catch (err) {
      if (this.closed) throw closedError();
      if (abort.signal.aborted) {
        const reason: unknown = abort.signal.reason;
        throw reason instanceof Error ? reason : new Error('the call was cancelled', { cause: reason });
      }
      throw new Error(`local ${task.role} failed: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      clearTimeout(timer);
      call?.signal?.removeEventListener('abort', onCancel);
    }
  }

  /** Terminates every thread; waiting and running tasks fail. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.destroy();
  }
}
