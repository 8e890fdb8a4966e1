/**
 * The record of a finished phase, as the compaction role is handed it: the user's inputs, the
 * agent's replies, its tool calls with clipped arguments and results, and the phase's artifacts.
 * The same record yields the deterministic hand-off when the compaction model fails
 * (contract/handoff.ts), so a phase never ends without a summary of what it did.
 *
 * Pure module: safe to import from workflow code.
 */
import { RECORD_LIMITS, deterministicHandoff, renderHandoff, type PhaseRecord } from '../../contract/handoff.js';
import type { Phase, SessionState } from '../../contract/state.js';
import { clipBytes } from '../../contract/text.js';

/** Clipped sizes of the record's texts, in UTF-8 bytes. */
const BYTES = { input: 2048, reply: 2048, arguments: 300, result: 600 } as const;

/** Whether a seq belongs to the phase (its end is set once the next phase opened). */
function inPhase(phase: Phase, seq: number): boolean {
  return seq >= phase.startedAtSeq && (phase.endedAtSeq === null || seq <= phase.endedAtSeq);
}

/** The whole record of `phase`, newest entries kept when a list is over its RECORD_LIMITS. */
export function phaseRecord(state: SessionState, phase: Phase): PhaseRecord {
  const items = state.transcript.filter((item) => inPhase(phase, item.seq));
  const inputs = state.history.filter((h) => h.phaseIndex === phase.index).map((h) => clipBytes(h.text, BYTES.input));
  // A sub-session's answer is part of what the phase produced, as much as the agent's own reply.
  const replies = items.flatMap((item) =>
    item.kind === 'reply'
      ? [clipBytes(item.text, BYTES.reply)]
      : item.kind === 'sub-reply'
        ? [clipBytes(`Sub-session ${item.sessionId} answered "${item.request}": ${item.text}`, BYTES.reply)]
        : [],
  );
  const toolCalls = items.flatMap((item) =>
    item.kind === 'step'
      ? item.calls.map((c) => ({
          tool: c.tool,
          callId: c.callId,
          seq: item.seq,
          arguments: clipBytes(c.arguments, BYTES.arguments),
          status: c.status,
          result: clipBytes(c.output, BYTES.result),
        }))
      : [],
  );
  const artifacts = state.artifacts
    .filter((a) => a.phaseIndex === phase.index)
    .map((a) => ({ uri: a.uri, kind: a.kind, tool: a.tool, callId: a.callId, seq: a.seq }));
  return {
    phaseGoal: phase.goal.text,
    inputs: inputs.slice(-RECORD_LIMITS.inputs),
    replies: replies.slice(-RECORD_LIMITS.replies),
    toolCalls: toolCalls.slice(-RECORD_LIMITS.toolCalls),
    artifacts: artifacts.slice(-RECORD_LIMITS.artifacts),
  };
}

/** The summary kept when the compaction model fails: the deterministic hand-off of the same record. */
export function fallbackSummary(record: PhaseRecord): string {
  return renderHandoff(record.phaseGoal, deterministicHandoff(record));
}
