import { describe, expect, it } from 'vitest';
import { SessionStart, type SubSessionReply } from '../../contract/messages.js';
import type { DecisionRecord, SessionState } from '../../contract/state.js';
import {
  awaitsCollaboration,
  beginFollowUp,
  finishFollowUp,
  recordDelegation,
  takeDelegatedReply,
} from '../../workflows/children/collaboration.js';
import { newRecord } from '../../workflows/ledger/decision-records.js';
import { initialState } from '../../workflows/run/state.js';

const CHILD = 's1.sub-abc';

/** A Session whose input 2 delegated (`mode`) and whose turn for it ended with two steps. */
function delegated(mode: 'collaborate' | 'notify'): { state: SessionState; record: DecisionRecord } {
  const state = initialState(SessionStart.parse({ sessionId: 's1' }));
  const input = {
    seq: 2,
    messageId: 'm2',
    text: 'Ask a specialist',
    resources: [],
    from: null,
    receivedAt: 0,
    via: 'signal' as const,
    routed: null,
    note: null,
    boundAt: 0,
    phaseIndex: 0,
    decision: 'continue' as const,
    reply: 'Asked.',
  };
  state.history.push(input);
  state.boundSeq = 2;
  const record = newRecord(input);
  record.decision = 'continue';
  record.agent = {
    outcome: 'replied',
    reason: null,
    startedAt: 0,
    endedAt: 10,
    reply: 'Asked.',
    steps: 2,
    toolCalls: [],
  };
  recordDelegation(record, { callId: 'call_1', sessionId: CHILD, childSeq: 1, mode, at: 5 });
  state.decisions.push(record);
  return { state, record };
}

const reply = (extra: Partial<SubSessionReply> = {}): SubSessionReply => ({
  sessionId: CHILD,
  seq: 1,
  parentSeq: 2,
  messageId: 'tool:2:call_1',
  reason: 'delegated',
  outcome: 'replied',
  reply: 'Port 8188.',
  why: null,
  ...extra,
});

describe('a collaborating delegation', () => {
  it('starts a follow-up turn on a copy of the record when the Session is between turns on that input', () => {
    const { state, record } = delegated('collaborate');
    expect(awaitsCollaboration(state, record, 100)).toBe(true);
    takeDelegatedReply(state, reply(), 50);
    expect(record.delegations![0]).toMatchObject({ status: 'answered', reply: { text: 'Port 8188.', at: 50 } });
    const turn = state.turn!;
    expect(turn).toMatchObject({ seq: 2, followUp: true, steps: 2, step: null });
    expect(turn.record).not.toBe(record);
    expect(turn.record.agent).toMatchObject({ reply: null, earlierReply: 'Asked.' });
    expect(turn.record.delegations![0]!.status).toBe('followed-up');
    // The caller keeps waiting while the follow-up runs, within the bound from the hand-over.
    expect(awaitsCollaboration(state, record, 100)).toBe(true);
    expect(awaitsCollaboration(state, record, 5 + state.settings.subSessionReplyWaitMs)).toBe(false);

    turn.record.agent!.reply = 'Final: Port 8188.';
    turn.record.agent!.outcome = 'replied';
    state.turn = null;
    finishFollowUp(state, turn.record);
    expect(state.decisions.filter((d) => d.seq === 2)).toEqual([turn.record]);
    expect(awaitsCollaboration(state, state.decisions[0]!, 100)).toBe(false);
    // A re-delivered reply finds no waiting delegation: nothing runs twice.
    takeDelegatedReply(state, reply(), 60);
    expect(state.turn).toBeNull();
  });

  it('waits for the running turn of that input, which takes the follow-up when it ends', () => {
    const { state, record } = delegated('collaborate');
    state.decisions.pop();
    state.turn = { seq: 2, record, from: null, steps: 2, step: null, failing: null, interrupted: false };
    takeDelegatedReply(state, reply(), 50);
    expect(state.turn.followUp).toBeUndefined();
    expect(record.delegations![0]!.status).toBe('answered');
    state.turn = null;
    state.decisions.push(record);
    expect(beginFollowUp(state, 2)).toBe(true);
    expect(state.turn).toMatchObject({ followUp: true });
  });

  it('is recorded with a note, and not acted on, once the Session has moved on', () => {
    const { state, record } = delegated('collaborate');
    state.boundSeq = 3;
    expect(awaitsCollaboration(state, record, 100)).toBe(false);
    takeDelegatedReply(state, reply(), 50);
    expect(state.turn).toBeNull();
    expect(record.delegations![0]).toMatchObject({ status: 'moved-on', reply: { text: 'Port 8188.' } });
    expect(record.delegations![0]!.note).toMatch(/moved on to input #3: recorded, not acted on/);
    expect(record.agent?.earlierReply).toBeUndefined();
  });
});

describe('a notify delegation', () => {
  it('records the reply and never holds the caller', () => {
    const { state, record } = delegated('notify');
    expect(awaitsCollaboration(state, record, 100)).toBe(false);
    takeDelegatedReply(state, reply(), 50);
    expect(record.delegations![0]).toMatchObject({ status: 'recorded', reply: { text: 'Port 8188.' } });
    expect(state.turn).toBeNull();
  });

  it('ignores a reply to a routed input or from another sub-session', () => {
    const { state, record } = delegated('collaborate');
    takeDelegatedReply(state, reply({ reason: 'out-of-scope' }), 50);
    takeDelegatedReply(state, reply({ sessionId: 's1.sub-other' }), 50);
    expect(record.delegations![0]!.status).toBe('waiting');
    expect(state.turn).toBeNull();
  });
});
