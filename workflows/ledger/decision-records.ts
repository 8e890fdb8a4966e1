/**
 * An input's decision record, from the moment it is bound until it is appended to `decisions`: at
 * once when the agent does not act on the input, or when its agent turn ends.
 */
import { enforceBudget } from '../../contract/budget.js';
import { keepLast, type BoundInput, type DecisionRecord, type SessionState } from '../../contract/state.js';
import { emit } from './events.js';
import { recordDecision, recordDegraded } from './metrics.js';

/** A bound input's record before anything is decided about it. */
export function newRecord(input: Pick<BoundInput, 'seq' | 'messageId'>): DecisionRecord {
  return {
    seq: input.seq,
    messageId: input.messageId,
    decision: 'uncertain',
    scores: null,
    bands: null,
    degraded: null,
    diff: null,
    dropped: [],
    fallbacks: [],
    stages: [],
    agent: null,
    route: null,
    usage: null,
  };
}

/**
 * Appends an input's finished decision record. With `announce: false` no `turn.finished` is emitted:
 * an input merged into a running turn says so with `input.merged`, and the turn it joined ends later.
 */
export function finishRecord(state: SessionState, record: DecisionRecord, { announce = true } = {}): void {
  recordDecision(record.decision);
  if (record.degraded) recordDegraded('relevance');
  for (const fallback of record.fallbacks) recordDegraded(fallback.slice(0, fallback.indexOf(':')) || 'other');
  const agent = record.agent;
  if (announce)
    emit(state, {
      kind: 'turn.finished',
      outcome: agent?.outcome ?? 'skipped',
      reason: agent ? agent.reason : `decision ${record.decision}: the agent did not act on this input`,
      reply: agent?.reply ?? null,
    });
  state.decisions.push(record);
  keepLast(state.decisions, state.settings.keepDecisions);
  state.counts.byDecision[record.decision] = (state.counts.byDecision[record.decision] ?? 0) + 1;
  enforceBudget(state);
}
