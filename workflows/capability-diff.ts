/**
 * Applying an orchestrator selection to the loaded capabilities as a difference. Pure: the
 * workflow commits the result only after a selection has succeeded, so capabilities are never
 * cleared before their replacement is known.
 */
import { z } from 'zod';
import { CAP_KINDS, Cap, type CapKind, type Capabilities, type CapabilityDiff } from './state.js';

export const Candidate = Cap.extend({ score: z.number() });
export type Candidate = z.infer<typeof Candidate>;

/** Recall's answer: scored candidates per capability kind. */
export const CandidatesSchema = z.object({
  skills: z.array(Candidate),
  toolsets: z.array(Candidate),
  memories: z.array(Candidate),
});
export type Candidates = z.infer<typeof CandidatesSchema>;

/** The ids to load, per kind. */
export type Selection = Record<CapKind, string[]>;

/**
 * The orchestrator's answer as received. A kind it leaves out (or sends as null) keeps its current capabilities: an
 * omission is not a selection, and nothing is cleared before a replacement has been selected.
 */
export const SelectionSchema = z.object({
  skills: z.array(z.string()).nullish(),
  toolsets: z.array(z.string()).nullish(),
  memories: z.array(z.string()).nullish(),
});
export type PartialSelection = z.infer<typeof SelectionSchema>;

export function completeSelection(answer: PartialSelection, current: Capabilities): Selection {
  const ids = (kind: CapKind) => answer[kind] ?? current[kind].map((c) => c.id);
  return { skills: ids('skills'), toolsets: ids('toolsets'), memories: ids('memories') };
}

const PREFIX: Record<CapKind, string> = { skills: 'skill', toolsets: 'toolset', memories: 'memory' };

/** `skill:web-research`, `toolset:weather`, `memory:42`: how diffs and dropped ids name capabilities. */
export function capKey(kind: CapKind, id: string): string {
  return `${PREFIX[kind]}:${id}`;
}

export function emptyCandidates(): Candidates {
  return { skills: [], toolsets: [], memories: [] };
}

export interface AppliedSelection {
  next: Capabilities;
  diff: CapabilityDiff;
  /** Selected ids that were neither candidates nor currently loaded, ignored. */
  dropped: string[];
}

/** Keeps the selected ids that are candidates or current, and reports what changed. */
export function applySelection(current: Capabilities, candidates: Candidates, selection: Selection): AppliedSelection {
  const diff: CapabilityDiff = { added: [], removed: [], kept: [] };
  const dropped: string[] = [];
  const next: Capabilities = { skills: [], toolsets: [], memories: [], revision: current.revision };
  for (const kind of CAP_KINDS) {
    const loaded = new Map(current[kind].map((c) => [c.id, c]));
    const offered = new Map(candidates[kind].map((c) => [c.id, c]));
    const chosen = new Set<string>();
    for (const id of selection[kind]) {
      if (chosen.has(id)) continue;
      const cap = loaded.get(id) ?? offered.get(id);
      if (!cap) {
        dropped.push(capKey(kind, id));
        continue;
      }
      chosen.add(id);
      next[kind].push({ id: cap.id, name: cap.name, source: cap.source });
      (loaded.has(id) ? diff.kept : diff.added).push(capKey(kind, id));
    }
    for (const id of loaded.keys()) if (!chosen.has(id)) diff.removed.push(capKey(kind, id));
  }
  if (diff.added.length > 0 || diff.removed.length > 0) next.revision = current.revision + 1;
  return { next, diff, dropped };
}
