/**
 * The approval state machine of a tool call (workflows/agent/tool-calls.ts, contract/pending-calls.ts, workflows/control/approvals.ts), without Temporal: what a call
 * needs next, which approval answers it, and what a refused approval leaves behind.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { initialState } from '../../workflows/run/state.js';
import type { ActiveTurn, SessionState } from '../../contract/state.js';
import { applyApproval } from '../../workflows/control/approvals.js';
import { nextAction, pendingRecordCalls, sealStep, startStep } from '../../workflows/agent/tool-calls.js';
import { approvalIdOf, argumentsHashOf, waitingApprovals } from '../../contract/pending-calls.js';
import type { ResolvedToolCall } from '../../contract/transcript.js';

const call = (callId: string, args: object, extra: Partial<ResolvedToolCall> = {}): ResolvedToolCall => ({
  callId,
  tool: 'add',
  arguments: JSON.stringify(args),
  toolset: 'mcp-fixture',
  execution: 'mcp',
  requiresApproval: true,
  argumentError: null,
  policy: null,
  ...extra,
});

/** A Session whose turn for input `seq` is at model step `step` with `calls`. */
function turnWith(seq: number, step: number, calls: ResolvedToolCall[]): SessionState & { turn: ActiveTurn } {
  const state = initialState({ sessionId: 's-1' });
  const turn: ActiveTurn = {
    seq,
    record: {
      seq,
      messageId: `m-${seq}`,
      decision: 'continue',
      scores: null,
      bands: null,
      degraded: null,
      diff: null,
      dropped: [],
      fallbacks: [],
      stages: [],
      agent: {
        outcome: 'waiting-approval',
        reason: null,
        startedAt: 0,
        endedAt: 0,
        reply: null,
        steps: 0,
        toolCalls: [],
      },
      route: null,
      usage: null,
    },
    from: null,
    steps: step,
    step: null,
    failing: null,
    interrupted: false,
  };
  startStep(turn, null, calls);
  state.turn = turn;
  return state as SessionState & { turn: ActiveTurn };
}

/** Moves the step's first call that needs approval to waiting, as the agent loop does. */
function wait(state: SessionState): void {
  const next = state.turn?.step?.calls.find((c) => nextAction(c).kind === 'await-approval');
  if (next) next.state = 'waiting-approval';
}

describe('approval ids and argument hashes', () => {
  it('names one call in the Session’s life: input seq, model step and call id', () => {
    const state = turnWith(7, 2, [call('call_1', { a: 1 })]);
    expect(approvalIdOf(state.turn, { callId: 'call_1' })).toBe('7:2:call_1');
    expect(approvalIdOf({ ...state.turn, seq: 8 }, { callId: 'call_1' })).toBe('8:2:call_1');
  });

  it('replaces a call id longer than 64 characters by a digest, so the id stays within the signal’s bound', () => {
    const state = turnWith(3, 1, []);
    const id = approvalIdOf(state.turn, { callId: 'x'.repeat(500) });
    expect(id).toMatch(/^3:1:#[0-9a-f]{32}$/);
    expect(id.length).toBeLessThanOrEqual(200);
    expect(approvalIdOf(state.turn, { callId: 'y'.repeat(500) })).not.toBe(id);
  });

  it('hashes the arguments exactly as the model wrote them (SHA-256, hex)', () => {
    const args = '{"path":"/tmp/a.md","note":"中文"}';
    expect(argumentsHashOf({ arguments: args })).toBe(createHash('sha256').update(args, 'utf8').digest('hex'));
    expect(argumentsHashOf({ arguments: '{"a":1}' })).not.toBe(argumentsHashOf({ arguments: '{"a": 1}' }));
  });
});

describe('applyApproval', () => {
  it('answers only a call that waits now, by its own approval id', () => {
    const state = turnWith(2, 1, [call('call_a', { a: 1 }), call('call_b', { a: 2 })]);
    // Nothing waits yet: even the right id is refused.
    expect(applyApproval(state, { approvalId: '2:1:call_a', approved: true }, 10)).toEqual({
      refused: 'approval 2:1:call_a matches no tool call waiting for approval (no call waits for approval)',
    });
    wait(state);
    expect(waitingApprovals(state.turn).map((c) => c.callId)).toEqual(['call_a']);
    // The second call has not asked yet; the bare call id names nothing.
    expect(applyApproval(state, { approvalId: '2:1:call_b', approved: true }, 11)).toHaveProperty('refused');
    expect(applyApproval(state, { approvalId: 'call_a', approved: true }, 12)).toEqual({
      refused: 'approval call_a matches no tool call waiting for approval (waiting now: 2:1:call_a)',
    });
    const applied = applyApproval(state, { approvalId: '2:1:call_a', approved: true, approver: 'alice' }, 13);
    expect(applied).toHaveProperty('answered.callId', 'call_a');
    const [a, b] = state.turn.step?.calls ?? [];
    expect(a).toMatchObject({ state: 'approved', approval: { approved: true, by: 'alice', note: null, at: 13 } });
    expect(nextAction(a!)).toEqual({ kind: 'run', via: 'mcp' });
    expect(b).toMatchObject({ state: 'new', approval: null });
    // The same approval again: the call no longer waits.
    expect(applyApproval(state, { approvalId: '2:1:call_a', approved: true }, 14)).toHaveProperty('refused');
  });

  it('refuses an argument hash other than the waiting call’s and leaves the call waiting', () => {
    const state = turnWith(4, 1, [call('call_1', { path: 'b.md' })]);
    wait(state);
    const wrong = argumentsHashOf({ arguments: JSON.stringify({ path: 'a.md' }) });
    const refused = applyApproval(state, { approvalId: '4:1:call_1', argumentsHash: wrong, approved: true }, 5);
    expect('refused' in refused && refused.refused).toContain('other than the waiting call');
    expect(state.turn.step?.calls[0]).toMatchObject({ state: 'waiting-approval', approval: null });
    const right = argumentsHashOf({ arguments: JSON.stringify({ path: 'b.md' }) });
    expect(applyApproval(state, { approvalId: '4:1:call_1', argumentsHash: right, approved: true }, 6)).toHaveProperty(
      'answered',
    );
  });

  it('a rejection finishes the call with the note the model sees, and the record says who rejected', () => {
    const state = turnWith(5, 1, [call('call_1', { a: 1 })]);
    wait(state);
    applyApproval(state, { approvalId: '5:1:call_1', approved: false, note: '  not now ', approver: 'bob' }, 9);
    const [c] = state.turn.step?.calls ?? [];
    expect(c).toMatchObject({ state: 'done', result: 'rejected', output: 'rejected by the user: not now' });
    expect(nextAction(c!)).toEqual({ kind: 'done' });
    expect(pendingRecordCalls(state.turn)[0]).toMatchObject({
      status: 'rejected',
      approval: { approved: false, by: 'bob', note: 'not now', at: 9 },
    });
    sealStep(state, state.turn);
    expect(state.turn.record.agent?.toolCalls[0]?.approval).toMatchObject({ by: 'bob' });
  });

  it('for runs that predate approval ids, still answers by the model’s call id (and by the new id)', () => {
    const state = turnWith(2, 1, [call('call_1', { a: 1 }), call('call_2', { a: 2 })]);
    // As before approval ids: a call not yet waiting could be answered ahead.
    expect(applyApproval(state, { approvalId: 'call_2', approved: true }, 1, false)).toHaveProperty('answered');
    wait(state);
    expect(applyApproval(state, { approvalId: '2:1:call_1', approved: true }, 2, false)).toHaveProperty('answered');
    expect(state.turn.step?.calls.map((c) => c.state)).toEqual(['approved', 'approved']);
  });
});

describe('nextAction', () => {
  it('never runs a call that needs approval before it is approved', () => {
    const state = turnWith(1, 1, [
      call('c1', { a: 1 }),
      call('c2', { a: 1 }, { requiresApproval: false }),
      call('c3', { a: 1 }, { argumentError: 'a: expected number' }),
      call('c4', { a: 1 }, { execution: 'unknown' }),
      call('c5', { a: 1 }, { execution: 'external', requiresApproval: false }),
    ]);
    expect(state.turn.step?.calls.map((c) => nextAction(c).kind)).toEqual([
      'await-approval',
      'run',
      'finish',
      'finish',
      'await-result',
    ]);
  });
});
