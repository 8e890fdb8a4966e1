/**
 * Cancellation scopes for the calls an input makes that something may cancel (an `interrupt`, a
 * discarded speculative step), without a cached Session growing with every call.
 *
 * The SDK links each new CancellationScope to its parent by a reaction on the parent's
 * `cancelRequested`, a promise that settles only when the parent is cancelled, and each activity
 * scheduled in a cancellable scope adds one more reaction to that scope's promise. A scope per call
 * made as a child of the root scope therefore stayed reachable from the root for the rest of the
 * run, with its activity's cancellation closure: heap snapshots of the workflow thread (the
 * capacity benchmark's `--capacity-snapshots`) showed ~7 KB of the ~12 KB a continue input added
 * hanging off the root scope's reactions.
 *
 * Here every call scope is a child of a generation scope. Once a generation has had `GENERATION`
 * children and none of them is still open, it is cancelled and the next call starts a new one: the
 * cancellation settles the promises of the finished children, which lets go of them and their
 * reactions, and only the generation itself stays linked to the root. Cancelling a generation
 * whose children have all finished pushes no command (an activity's cancellation closure returns
 * when the activity has already completed), so the history and replay are unchanged: no patch.
 *
 * A generation's parent is the scope its CallScopes was made in (the root, for every user), not the
 * scope current when the generation happens to start: a generation begun during one input is used
 * by the next ones, and must not be cancelled with the scope that input ran in.
 *
 * `run` is the same for a stretch of work whose activities, timers and conditions should hang off a
 * scope that is let go of later: each input the main loop processes, and each wait between inputs.
 * Everything such work starts must have settled when it returns, or be in a scope of its own (the
 * relevance judged ahead, the speculative step, the interruptible calls): retiring the generation
 * would cancel it.
 */
import { CancellationScope } from '@temporalio/workflow';

/** Call scopes per generation: a retired generation stays held by the root scope (a few hundred bytes). */
export const GENERATION = 8;

/** The generations of one run's call scopes. */
export class CallScopes {
  /** The parent of every generation: the scope this was made in. */
  private readonly parent = CancellationScope.current();
  private generation: CancellationScope | null = null;
  /** Children made in the current generation, and of those the ones not yet released. */
  private made = 0;
  private open = 0;

  /** A fresh cancellable scope for one call; `release` it once the call has settled. */
  child(): CancellationScope {
    if (this.generation === null) {
      this.generation = new CancellationScope({ cancellable: true, parent: this.parent });
      this.made = 0;
    }
    this.made++;
    this.open++;
    return new CancellationScope({ cancellable: true, parent: this.generation });
  }

  /**
   * Runs `fn` in a fresh call scope and releases it once `fn` has settled. The caller awaits the
   * scope's own promise (no extra await in between), so its continuation runs no later than before.
   */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const done = this.child().run(fn);
    const release = () => this.release();
    void done.then(release, release);
    return done;
  }

  /** The call in a scope from `child` has settled; a full generation with nothing open is retired. */
  release(): void {
    this.open--;
    if (this.open === 0 && this.made >= GENERATION && this.generation !== null) {
      const retired = this.generation;
      this.generation = null;
      retired.cancel();
      // The CancelledFailure keeps the frames it was made in, and what their closures hold, until
      // its stack is read; read now, the stack is a string and those frames are let go.
      void retired.cancelRequested.catch((err: unknown) => (err instanceof Error ? err.stack : undefined));
    }
  }
}
