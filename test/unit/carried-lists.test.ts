/**
 * CARRIED_LISTS is the one table of SessionState's lists: a list missing from it would be left out
 * of the limits, the byte budget, the cap's trim order and the initial state.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BUDGET } from '../../contract/budget.js';
import { CARRIED_LISTS, SessionState } from '../../contract/state.js';
import { initialState } from '../../workflows/run/state.js';

/** The fields of the SessionState schema that hold arrays, defaults unwrapped. */
function arrayFields(): string[] {
  return Object.entries(SessionState.shape)
    .filter(([, field]) => {
      const inner: unknown = field instanceof z.ZodDefault ? field.unwrap() : field;
      return inner instanceof z.ZodArray;
    })
    .map(([name]) => name);
}

describe('CARRIED_LISTS', () => {
  it('has one row per array field of SessionState, in the schema order', () => {
    const fields = arrayFields();
    expect(fields).toContain('transcript');
    expect(Object.keys(CARRIED_LISTS)).toEqual(fields);
  });

  it('gives every list a byte share and a distinct place in the cap order', () => {
    const ranks = Object.values(CARRIED_LISTS).flatMap((row) => (row.cap ? [row.cap.rank] : []));
    expect(new Set(ranks).size).toBe(ranks.length);
    for (const [name, row] of Object.entries(CARRIED_LISTS)) {
      expect(BUDGET[name as keyof typeof CARRIED_LISTS]).toBe(row.bytes);
      // Only the queue is never trimmed to fit the cap: it is work the Session has promised to do.
      expect(row.cap === null).toBe(name === 'queue');
    }
  });

  it('starts a new Session with every list empty and its fields in the schema order', () => {
    const state = initialState({ sessionId: 'lists' });
    expect(Object.keys(state)).toEqual(Object.keys(SessionState.shape));
    for (const name of Object.keys(CARRIED_LISTS)) expect(state[name as keyof typeof CARRIED_LISTS]).toEqual([]);
    expect(initialState({ sessionId: 'lists', goals: { phase: 'p' } }).phases).toHaveLength(1);
  });
});
