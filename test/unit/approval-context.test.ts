/**
 * What the approval inbox shows beside a waiting call (contract/pending-calls.ts): why it waits (the
 * policy rule, the toolset's flag or a user-scope memory save, with the tool's risk tags), the user's
 * message of the turn and the agent's words beside the call, clipped.
 */
import { describe, expect, it } from 'vitest';
import { APPROVAL_CONTEXT_CHARS } from '../../contract/events.js';
import { approvalContextOf, approvalReasonOf } from '../../contract/pending-calls.js';
import type { ActiveTurn, PendingCall, SessionState } from '../../contract/state.js';

const pending = (extra: Partial<PendingCall> = {}): PendingCall => ({
  callId: 'call_1',
  tool: 'add',
  arguments: '{"a":1,"b":2}',
  toolset: 'mcp-fixture',
  execution: 'mcp',
  requiresApproval: true,
  argumentError: null,
  policy: null,
  state: 'waiting-approval',
  requestedAt: 1,
  output: null,
  result: null,
  approval: null,
  originalArguments: null,
  editedBy: null,
  ...extra,
});

describe('why a call waits', () => {
  it("names the toolset's flag and the tool's risk tags when no rule decided", () => {
    expect(approvalReasonOf(pending({ riskTags: ['ledger-write'] }))).toEqual({
      source: 'toolset',
      rule: null,
      reason: null,
      toolset: 'mcp-fixture',
      riskTags: ['ledger-write'],
    });
  });

  it('names the policy rule and its reason when a rule asked for approval', () => {
    const policy = { effect: 'approve' as const, rule: 'echo-reaches-customers', index: 0, reason: 'customers see it' };
    expect(approvalReasonOf(pending({ policy }))).toMatchObject({
      source: 'policy',
      rule: 'echo-reaches-customers',
      reason: 'customers see it',
    });
  });

  it("an allow rule that could not lift the toolset's flag leaves the flag as the reason", () => {
    const policy = { effect: 'allow' as const, rule: 'reads-ok', index: 1, reason: null };
    expect(approvalReasonOf(pending({ policy }))).toMatchObject({ source: 'toolset', rule: null });
  });

  it("a built-in memory_save waits because it writes into the user's scope; calls from older workers carry no tags", () => {
    expect(approvalReasonOf(pending({ tool: 'memory_save', toolset: null, execution: 'builtin' }))).toEqual({
      source: 'user-memory',
      rule: null,
      reason: null,
      toolset: null,
      riskTags: [],
    });
  });
});

describe("the user's message and the agent's words", () => {
  const turn = (text: string | null) => ({ seq: 2, step: { text, calls: [] } }) as unknown as ActiveTurn;
  const state = (history: Array<{ seq: number; text: string }>, transcript: unknown[] = []) =>
    ({ history, transcript }) as unknown as Pick<SessionState, 'history' | 'transcript'>;

  it("takes the turn's input and the step's text, clipped", () => {
    const long = 'x'.repeat(APPROVAL_CONTEXT_CHARS + 50);
    const context = approvalContextOf(
      state([
        { seq: 1, text: 'earlier' },
        { seq: 2, text: long },
      ]),
      turn('Adding.'),
      pending(),
    );
    expect(context.userMessage).toHaveLength(APPROVAL_CONTEXT_CHARS);
    expect(context.userMessage?.endsWith('…')).toBe(true);
    expect(context.agentText).toBe('Adding.');
  });

  it('falls back to the transcript when the input left the history, and says null when the agent wrote nothing', () => {
    const context = approvalContextOf(
      state([], [{ kind: 'user', seq: 2, text: 'please add', resources: [] }]),
      turn('  '),
      pending(),
    );
    expect(context).toMatchObject({ userMessage: 'please add', agentText: null });
  });
});
