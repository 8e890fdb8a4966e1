import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { intake } from '../../workflows/ledger/intake.js';
import { restoreState } from '../../workflows/run/state.js';

/** State saved by schemaVersion 1: carried across continue-as-new by Sessions already running. */
const v1 = JSON.parse(readFileSync('test/fixtures/session-state.v1.json', 'utf8')) as unknown;

describe('saved state', () => {
  it('restores a schemaVersion 1 state with its queue, seq ledger and de-duplication memory', () => {
    const restored = restoreState(v1);
    expect(restored.ok).toBe(true);
    if (!restored.ok) return;
    const state = restored.state;
    expect(state.goals.phase?.text).toBe('Convert the Markdown we just created to Word');
    expect(state.queue.map((q) => q.messageId)).toEqual(['m3']);
    expect(intake(state, { messageId: 'm1', text: 'again' }, 'signal', 0)).toEqual({ kind: 'duplicate', seq: 1 });
    expect(intake(state, { messageId: 'm4', text: 'new' }, 'signal', 0)).toEqual({ kind: 'accepted', seq: 4 });
  });

  it('refuses state of an unknown shape with a reason instead of guessing', () => {
    const broken = { ...(v1 as Record<string, unknown>), schemaVersion: 99, queue: 'nope' };
    const restored = restoreState(broken);
    expect(restored.ok).toBe(false);
    if (restored.ok) return;
    expect(restored.reason).toContain('schemaVersion');
    expect(restored.reason).toContain('queue');
  });

  it('round-trips through JSON unchanged (no Map, Set or Date in state)', () => {
    const restored = restoreState(v1);
    if (!restored.ok) throw new Error(restored.reason);
    expect(JSON.parse(JSON.stringify(restored.state))).toEqual(restored.state);
  });
});
