/**
 * The speculative step's rule and accounting, without Temporal: when a Session is continue-shaped,
 * and how a discarded step is summed. test/speculation.test.ts runs the step on a real server.
 */
import { describe, expect, it } from 'vitest';
import { addDiscarded, emptyTotals, type ModelUsage } from '../../contract/usage.js';
import type { BoundInput, Decision } from '../../contract/state.js';
import { bindNext, intake } from '../../workflows/ledger/intake.js';
import { notContinueShaped } from '../../workflows/agent/speculation.js';
import { initialState } from '../../workflows/run/state.js';

/** A Session with goals whose first input was decided `previous`, and its second input bound. */
function secondInput(previous: Decision | null, settings: Record<string, unknown> = {}) {
  const state = initialState({
    sessionId: 'spec',
    goals: { session: 'Own the Q3 report', phase: 'Draft the outline' },
    settings,
  });
  intake(state, { messageId: 'first', text: 'start the report' }, 'signal', 0);
  const first = bindNext(state, 0) as BoundInput;
  first.decision = previous;
  intake(state, { messageId: 'second', text: 'add a summary' }, 'signal', 1);
  const input = bindNext(state, 1) as BoundInput;
  return { state, input };
}

const usage = (promptTokens: number, completionTokens: number): ModelUsage => ({
  model: 'agent-model',
  promptTokens,
  completionTokens,
  cachedTokens: 0,
  reasoningTokens: 0,
  latencyMs: 10,
  costUsd: 0.001,
});

describe('notContinueShaped', () => {
  it('is continue-shaped after an input that continued, initialized or opened a phase', () => {
    for (const previous of ['continue', 'initialize', 'new-phase'] as const) {
      const { state, input } = secondInput(previous);
      expect(notContinueShaped(state, input, false, null)).toBeNull();
    }
  });

  it('is not after an input that left the phase in doubt, nor before the previous one was decided', () => {
    for (const previous of ['out-of-scope', 'conflict', 'uncertain', 'degraded', null] as const) {
      const { state, input } = secondInput(previous);
      expect(notContinueShaped(state, input, false, null)).toBe('the previous input did not continue a phase');
    }
  });

  it('needs goals, no active turn, the agent turn, the setting and a worker that allows it', () => {
    const first = secondInput('continue');
    expect(notContinueShaped(first.state, first.input, true, null)).toBe('no goals to continue');
    const noPhase = secondInput('continue');
    noPhase.state.goals.phase = null;
    expect(notContinueShaped(noPhase.state, noPhase.input, false, null)).toBe('no goals to continue');
    const off = secondInput('continue', { speculativeAgentStep: false });
    expect(notContinueShaped(off.state, off.input, false, null)).toBe('speculation off');
    const forbidden = secondInput('continue');
    expect(notContinueShaped(forbidden.state, forbidden.input, false, { speculativeAgentStep: false })).toBe(
      'speculation off',
    );
    const noAgent = secondInput('continue', { agentTurn: false });
    expect(notContinueShaped(noAgent.state, noAgent.input, false, null)).toBe('agent turn off');
  });

  it('with fewer-actions, not after initialize, where a new phase is as likely; after continue or new-phase still', () => {
    const likely = { likelyContinue: true, ahead: null };
    const afterInit = secondInput('initialize');
    expect(notContinueShaped(afterInit.state, afterInit.input, false, null, likely)).toBe(
      'no continue likely after initialize',
    );
    for (const previous of ['continue', 'new-phase'] as const) {
      const { state, input } = secondInput(previous);
      expect(notContinueShaped(state, input, false, null, likely)).toBeNull();
    }
    const doubt = secondInput('uncertain');
    expect(notContinueShaped(doubt.state, doubt.input, false, null, likely)).toBe(
      'the previous input did not continue a phase',
    );
  });

  it('with fewer-actions, sends nothing ahead once a judgment made ahead has answered, whatever it decided', () => {
    for (const ahead of ['continue', 'new-phase', 'out-of-scope'] as const) {
      const { state, input } = secondInput('continue');
      expect(notContinueShaped(state, input, false, null, { likelyContinue: true, ahead })).toBe(
        `decided ahead: ${ahead}`,
      );
      // Runs recorded before the patch ignore it.
      expect(notContinueShaped(state, input, false, null, { likelyContinue: false, ahead })).toBeNull();
    }
  });

  it('defaults the setting on, and old settings without it parse with it on', () => {
    expect(secondInput('continue').state.settings.speculativeAgentStep).toBe(true);
  });
});

describe('addDiscarded', () => {
  it('counts a known step in total, its role and the speculative part; an unknown one only as a step', () => {
    const totals = emptyTotals();
    addDiscarded(totals, 'agent', usage(700, 30));
    addDiscarded(totals, 'agent', undefined);
    expect(totals.total).toMatchObject({ calls: 1, promptTokens: 700, completionTokens: 30 });
    expect(totals.byRole.agent).toMatchObject({ calls: 1, promptTokens: 700 });
    expect(totals.speculative).toMatchObject({
      discarded: 2,
      unknown: 1,
      usage: { calls: 1, promptTokens: 700, completionTokens: 30 },
    });
  });
});
