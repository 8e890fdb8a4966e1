/**
 * Cancellation scopes for the calls an input makes that something may cancel (an `interrupt`, a
 * discarded speculative step), without a cached Session growing with every call.
 *
 * The SDK links each new CancellationScope to its parent by a reaction on the parent's
 * `cancelRequested`, a promise that settles only when the parent is cancelled, and each activity,
 * timer or condition started in a cancellable scope adds one more reaction to that scope's promise
 * (its cancellation closure, which holds what the call was given). A scope made as a child of the
 * root scope therefore stays reachable from the root for the rest of the run, with those closures.
 *
 * So here:
 * - A call's scope is settled (cancelled) as soon as the call has settled: its promise lets go of
 *   the cancellation closures of everything the call started. Cancelling a scope whose work has all
 *   finished pushes no command (an activity's, timer's or child's cancellation closure returns when
 *   it has already completed; a condition's drops a wait that is over), so the history and replay
 *   are unchanged: no patch.
 * - Call scopes are children of generation scopes, `LEVELS` deep: a generation that has had
 *   `GENERATION` children and has none open is settled too, which lets go of its children (the
 *   reactions on its promise), and it counts as one finished child of the generation above. Only a
 *   top generation, one per GENERATION ** LEVELS calls, stays linked to the parent for the rest of
 *   the run. A settled child stays linked to its open generation until that settles, so a CallScopes
 *   holds up to LEVELS × (GENERATION − 1) settled scopes of a few hundred bytes each: 4 × 4 keeps 12
 *   (8 × 3 kept 21, and a long conversation's heap swung by ~20 KB per Session with them), for a
 *   third of a generation scope per call rather than a seventh.
 * - Every scope settles with one CancelledFailure per CallScopes whose stack is one line: a fresh
 *   failure per call would keep the frames it was made in (and what their closures hold) until its
 *   stack was read, and a read stack is a string of many lines, held by every settled promise.
 *
 * A generation's parent is the scope its CallScopes was made in (the root, for every user), not the
 * scope current when the generation happens to start: a generation begun during one input is used
 * by the next ones, and must not be cancelled with the scope that input ran in.
 *
 * `run` is the same for a stretch of work whose activities, timers and conditions should hang off a
 * scope that is let go of later: each input the main loop processes, and each wait between inputs.
 * Everything such work starts must have settled when it returns, or be in a scope of its own (the
 * relevance judged ahead, the speculative step, the interruptible calls): settling its scope would
 * cancel it.
 */
import { CancellationScope, CancelledFailure } from '@temporalio/workflow';

/** Children per generation, at each of the `LEVELS` levels. */
export const GENERATION = 4;
/** Generation levels above the call scopes: the parent keeps one top generation per GENERATION ** LEVELS calls. */
export const LEVELS = 4;

/** A scope that this module can settle with the failure it chooses (`cancel` makes a new one each time). */
class SettledScope extends CancellationScope {
  settle(failure: CancelledFailure): void {
    this.reject(failure);
  }
}

/** One generation scope and its count of children made and not yet settled. */
interface Generation {
  scope: SettledScope;
  made: number;
  open: number;
}

/** The generations of one run's call scopes. */
export class CallScopes {
  /** The parent of every top generation: the scope this was made in. */
  private readonly parent = CancellationScope.current();
  /** The current generation of each level, the call scopes' own first; null until needed again. */
  private readonly generations: Array<Generation | null> = Array.from({ length: LEVELS }, () => null);
  /** What every scope here settles with. */
  private readonly settled = oneLineFailure('call settled');

  /** A fresh cancellable scope for one call; `release` it once the call has settled. */
  child(): CancellationScope {
    const generation = this.current(0);
    generation.made++;
    generation.open++;
    return new SettledScope({ cancellable: true, parent: generation.scope });
  }

  /**
   * Runs `fn` in a fresh call scope and releases it once `fn` has settled. The caller awaits the
   * scope's own promise (no extra await in between), so its continuation runs no later than before.
   */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const scope = this.child();
    const done = scope.run(fn);
    const release = () => this.release(scope);
    void done.then(release, release);
    return done;
  }

  /** The call in `scope` (from `child`) has settled: the scope is settled, and so is a full generation with nothing open. */
  release(scope: CancellationScope): void {
    if (scope instanceof SettledScope) scope.settle(this.settled);
    for (let level = 0; level < LEVELS; level++) {
      const generation = this.generations[level];
      if (!generation) return;
      generation.open--;
      if (generation.open > 0 || generation.made < GENERATION) return;
      this.generations[level] = null;
      generation.scope.settle(this.settled);
      // A settled generation is one finished child of the generation above it.
    }
  }

  /** The current generation of `level`, begun (with those above it) if there is none. */
  private current(level: number): Generation {
    const existing = this.generations[level];
    if (existing) return existing;
    let parent: CancellationScope = this.parent;
    if (level + 1 < LEVELS) {
      const above = this.current(level + 1);
      above.made++;
      above.open++;
      parent = above.scope;
    }
    const generation = { scope: new SettledScope({ cancellable: true, parent }), made: 0, open: 0 };
    this.generations[level] = generation;
    return generation;
  }
}

/** A CancelledFailure whose stack is its first line only, so it holds no frames and no long string. */
function oneLineFailure(message: string): CancelledFailure {
  const failure = new CancelledFailure(message);
  Object.defineProperty(failure, 'stack', {
    value: `CancelledFailure: ${message}`,
    writable: true,
    configurable: true,
  });
  return failure;
}
