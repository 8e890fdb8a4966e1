/**
 * Applying an orchestrator selection to the loaded capabilities as a difference. Pure: the
 * workflow commits the result only after a selection has succeeded, so capabilities are never
 * cleared before their replacement is known.
 */
import type { Candidates, PartialSelection } from '../../contract/activity-contract.js';
import { CAP_KINDS, type Cap, type CapKind, type Capabilities, type CapabilityDiff } from '../../contract/state.js';

/** The ids to load, per kind. */
export type Selection = Record<CapKind, string[]>;

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

/** The selection that loads or unloads one capability on top of the current ones, all else kept. */
export function changeOne(current: Capabilities, kind: CapKind, id: string, op: 'load' | 'unload'): Selection {
  const ids = (k: CapKind) => current[k].map((c) => c.id);
  const selection: Selection = { skills: ids('skills'), toolsets: ids('toolsets'), memories: ids('memories') };
  selection[kind] = op === 'load' ? [...selection[kind], id] : selection[kind].filter((loaded) => loaded !== id);
  return selection;
}

/** Keeps the selected ids that are candidates or current, and reports what changed. */
export function applySelection(
  current: Capabilities,
  candidates: Record<CapKind, Cap[]>,
  selection: Selection,
): AppliedSelection {
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
