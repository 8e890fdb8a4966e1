/**
 * The local orchestration role: which capabilities a Session loads, from recall's scores alone.
 *
 * Rules, per kind (skills, toolsets, memories):
 * 1. **Score floor.** A candidate is selected when its recall score is at least `floor` × the best
 *    score of its kind, best first, at most `perKind` of them. Recall scores are BM25 scores of the
 *    same query, so they compare within a kind but mean nothing in absolute terms; a relative floor
 *    keeps the clear winners and drops the long tail.
 * 2. **Reconcile keeps what still fits.** In `reconcile` mode a current capability is kept when it
 *    is selected again by rule 1, or when its id or name shares a term with the new step (the phase
 *    goal and the input that opened it; stems, jieba words). The session goal is not used for this:
 *    it fits every phase, so it cannot tell which capability the new step still needs.
 * 3. **The answer is the complete target set** for every kind (current capabilities kept first,
 *    then new selections), so the workflow applies it as a difference. Only ids that are candidates
 *    or current are returned.
 */
import type { PartialSelection, OrchestrateRequest } from '../../contract/activity-contract.js';
import type { Cap } from '../../contract/state.js';
import { analyse, contentTerms, sameTerm } from './text.js';

export interface OrchestrationOptions {
  /** Fraction of the best score of a kind that a candidate must reach. */
  floor: number;
  /** Most candidates selected per kind (kept current capabilities do not count). */
  perKind: number;
}

export const DEFAULT_ORCHESTRATION: OrchestrationOptions = { floor: 0.5, perKind: 3 };

const KINDS = ['skills', 'toolsets', 'memories'] as const;

export function orchestrateLocally(
  request: OrchestrateRequest,
  options: OrchestrationOptions = DEFAULT_ORCHESTRATION,
): Required<PartialSelection> {
  const stepTerms = contentTerms(analyse(`${request.task.phaseGoal}\n${request.task.message}`));
  const out: Required<PartialSelection> = { skills: [], toolsets: [], memories: [] };
  for (const kind of KINDS) {
    const ranked = [...request.candidates[kind]].sort((a, b) => b.score - a.score || a.id.localeCompare(b.id));
    const best = ranked[0]?.score ?? 0;
    const selected =
      best > 0
        ? ranked
            .filter((c) => c.score >= options.floor * best)
            .slice(0, options.perKind)
            .map((c) => c.id)
        : [];
    const kept =
      request.mode === 'reconcile'
        ? request.current[kind].filter((cap) => selected.includes(cap.id) || fitsStep(cap, stepTerms)).map((c) => c.id)
        : [];
    out[kind] = [...new Set([...kept, ...selected])];
  }
  return out;
}

/** A capability still fits the step when its id or name shares a term with it. */
export function fitsStep(cap: Cap, stepTerms: string[]): boolean {
  const capTerms = contentTerms(analyse(`${cap.id.replace(/[-_]/g, ' ')} ${cap.name}`));
  return capTerms.some((c) => stepTerms.some((s) => sameTerm(c, s)));
}
