/**
 * Committing a change of the loaded capabilities: the new set, a revision record saying who made it
 * (the phase's orchestration or the agent's own load or unload) and for which input, and the event.
 * One way in for both, so every revision is recorded the same.
 */
import { LIMITS, keepLast, type RevisionReason, type SessionState } from '../../contract/state.js';
import { emit } from '../ledger/events.js';
import type { AppliedSelection } from './capability-diff.js';

/** Makes `applied` the loaded capabilities; a change (something added or removed) is a recorded revision. */
export function commitCapabilities(
  state: SessionState,
  applied: Pick<AppliedSelection, 'next' | 'diff'>,
  by: { reason: RevisionReason; seq: number; callId: string | null },
): void {
  state.capabilities = applied.next;
  const { added, removed } = applied.diff;
  if (added.length === 0 && removed.length === 0) return;
  const revision = applied.next.revision;
  state.capabilityRevisions.push({
    revision,
    reason: by.reason,
    seq: by.seq,
    callId: by.callId,
    added,
    removed,
    at: Date.now(),
  });
  keepLast(state.capabilityRevisions, LIMITS.capabilityRevisions);
  emit(state, { kind: 'capabilities.changed', added, removed, revision, reason: by.reason });
}

/** How many changes the agent made to the capabilities in the turn of input `seq`. */
export function agentChangesIn(state: SessionState, seq: number): number {
  return state.capabilityRevisions.filter((r) => r.reason === 'agent' && r.seq === seq).length;
}
