/**
 * Commands applied to state (workflows/control/commands.ts), without Temporal. The workflow only cancels the
 * running activity call when `interrupt` says a turn was interrupted.
 */
import { describe, expect, it } from 'vitest';
import { newRecord } from '../../workflows/ledger/decision-records.js';
import { applyControl } from '../../workflows/control/commands.js';
import { initialState } from '../../workflows/run/state.js';

const interrupt = (commandId: string) => ({ commandId, name: 'interrupt' });

describe('the interrupt command', () => {
  it('marks the turn in progress interrupted and asks for its running call to be cancelled', () => {
    const state = initialState({ sessionId: 'cmd' });
    const input = { seq: 1, messageId: 'm-1' } as Parameters<typeof newRecord>[0];
    state.turn = {
      seq: 1,
      record: newRecord(input),
      from: null,
      steps: 1,
      step: null,
      failing: null,
      interrupted: false,
    };
    const result = applyControl(state, 'command', interrupt('c-1'), 5);
    expect(result).toMatchObject({ kind: 'applied', interruptTurn: true, command: { name: 'interrupt' } });
    expect(state.turn.interrupted).toBe(true);
    // A repeated delivery is a duplicate and cancels nothing again.
    expect(applyControl(state, 'command', interrupt('c-1'), 6)).toEqual({ kind: 'duplicate', id: 'command:c-1' });
  });

  it('is recorded but interrupts nothing when no turn is in progress', () => {
    const state = initialState({ sessionId: 'cmd' });
    const result = applyControl(state, 'command', interrupt('c-2'), 5);
    expect(result).toMatchObject({ kind: 'applied', interruptTurn: false });
    expect(state.controlEvents.map((e) => e.id)).toEqual(['c-2']);
  });

  it('leaves other commands without an interruption', () => {
    const state = initialState({ sessionId: 'cmd' });
    expect(applyControl(state, 'command', { commandId: 'c-3', name: 'pause' }, 5)).toMatchObject({
      kind: 'applied',
      interruptTurn: false,
    });
    expect(state.status).toBe('paused');
  });
});
