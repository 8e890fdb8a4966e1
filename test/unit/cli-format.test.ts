import { describe, expect, it } from 'vitest';
import { formatDecision, formatInspect, formatTree } from '../../cli/format.js';
import { replyBackstop } from '../../cli/turn-stream.js';
import { ChildSession, DecisionRecord } from '../../contract/state.js';
import { initialState } from '../../workflows/run/state.js';
import { buildView, renderDetails } from '../../workflows/view/view.js';

type ChildDraft = { sessionId: string; goal: string; routed: number } & Partial<ChildSession>;

function view(parent?: string, children: ChildDraft[] = []) {
  const state = initialState({ sessionId: 'research', ...(parent ? { parentSessionId: parent } : {}) });
  state.children = children.map((c, i) => ChildSession.parse({ createdAtSeq: i + 1, lastRoutedSeq: i + 1, ...c }));
  return buildView(state, 'Idle');
}

/** A decision record: what a test names, and nothing decided or changed besides. */
function decisionRecord(fields: Record<string, unknown>): DecisionRecord {
  return DecisionRecord.parse({
    messageId: `m-${String(fields.seq)}`,
    decision: 'continue',
    scores: null,
    bands: null,
    degraded: null,
    diff: null,
    dropped: [],
    fallbacks: [],
    stages: [],
    agent: null,
    ...fields,
  });
}

describe('the session tree in `harness inspect`', () => {
  it('shows the parent, this Session and each sub-session with its goal and routed requests', () => {
    const tree = formatTree(
      view('desk', [
        { sessionId: 'research.sub-aaaa', goal: "Also check tomorrow's weather", routed: 2 },
        { sessionId: 'research.sub-bbbb', goal: 'Book the venue', routed: 1 },
      ]),
    );
    expect(tree.split('\n')).toEqual([
      'desk  (parent)',
      '└─ research  (this session)',
      "   ├─ research.sub-aaaa  Also check tomorrow's weather · 2 requests · idle",
      '   └─ research.sub-bbbb  Book the venue · 1 request · idle',
    ]);
  });

  it('shows whether each sub-session is working and the last reply it sent back', () => {
    const tree = formatTree(
      view(undefined, [
        {
          sessionId: 'research.sub-aaaa',
          goal: 'Weather',
          routed: 2,
          status: 'working',
          awaiting: 1,
          lastReply: { sessionId: 'research.sub-aaaa', seq: 1, outcome: 'replied', text: 'Rain on\nFriday.', at: 0 },
        },
        { sessionId: 'research.sub-bbbb', goal: 'Book the venue', routed: 1 },
      ]),
    );
    expect(tree.split('\n')).toEqual([
      'research  (this session)',
      '├─ research.sub-aaaa  Weather · 2 requests · working on 1',
      '│     last reply (#1, replied): Rain on Friday.',
      '└─ research.sub-bbbb  Book the venue · 1 request · idle',
    ]);
  });

  it('is part of inspect only when the Session has a parent or sub-sessions', () => {
    expect(formatInspect(view(), [])).not.toContain('Session tree');
    expect(
      formatInspect(view(undefined, [{ sessionId: 'research.sub-cccc', goal: 'Weather', routed: 1 }]), []),
    ).toContain('Session tree');
  });
});

describe('artifacts in `harness inspect` and the Web UI details', () => {
  it('lists each artifact with its producing call, input and phase', () => {
    const state = initialState({ sessionId: 'research' });
    state.artifacts = [
      {
        uri: 'comfyui-guide.md',
        kind: 'file',
        source: 'result',
        tool: 'write_markdown',
        callId: 'call_1',
        seq: 1,
        phaseIndex: 0,
        title: null,
        mimeType: null,
      },
    ];
    const text = formatInspect(buildView(state, 'Idle'), []);
    expect(text).toContain('Artifacts (1)');
    expect(text).toMatch(/comfyui-guide\.md\s*│\s*file\s*│\s*write_markdown \(call_1\)\s*│\s*#1\s*│\s*0/);
    expect(renderDetails(state, 'Idle')).toContain('**Artifacts:** comfyui-guide.md (write_markdown, #1)');
    expect(formatInspect(view(), [])).not.toContain('Artifacts');
  });
});

describe('a decision in `harness inspect`', () => {
  it('names the approval-policy rule that decided a tool call', () => {
    const record = decisionRecord({
      seq: 2,
      agent: {
        outcome: 'replied',
        reason: null,
        startedAt: 0,
        endedAt: 1,
        steps: 2,
        toolCalls: [
          {
            callId: 'call_1',
            tool: 'read_file',
            arguments: '{"path":"/secrets/key"}',
            status: 'error',
            result: 'denied by policy rule no-secrets (read_file was not run)',
            policy: { effect: 'deny', rule: 'no-secrets', index: 0, reason: null },
          },
        ],
      },
    });
    expect(formatDecision(record, null, null)).toContain(
      'tool read_file({"path":"/secrets/key"}) [error] policy deny by rule no-secrets callId call_1',
    );
    // The notes column wraps; the rule is on a line of its own.
    expect(formatInspect(view(), [record])).toContain('(deny: no-secrets)');
  });
});

describe('sub-sessions in the Web UI details', () => {
  it('shows each child with its status, what it still awaits and its last reply', () => {
    const state = initialState({ sessionId: 'research' });
    state.children = [
      ChildSession.parse({
        sessionId: 'research.sub-aaaa',
        goal: 'Weather',
        createdAtSeq: 1,
        lastRoutedSeq: 1,
        routed: 1,
      }),
      ChildSession.parse({
        sessionId: 'research.sub-bbbb',
        goal: 'Translate',
        createdAtSeq: 2,
        lastRoutedSeq: 3,
        routed: 2,
        status: 'working',
        awaiting: 1,
        lastReply: { sessionId: 'research.sub-bbbb', seq: 1, outcome: 'replied', text: 'Bonjour.', at: 5 },
      }),
    ];
    const details = renderDetails(state, 'Idle');
    expect(details).toContain(
      '**Sub-sessions:** research.sub-bbbb (working, 1 awaiting, last reply (replied): Bonjour.); research.sub-aaaa (idle)',
    );
  });
});

describe('configuration errors in `harness inspect`', () => {
  it('lists a refused parameter apart from ordinary degraded inputs, once, with the fix', () => {
    const refusal =
      "ModelConfigError: relevance model answered HTTP 400: Unsupported parameter: 'max_tokens' is not supported with this model.; fix: set HARNESS_PROVIDER=openai-reasoning [NON_RETRYABLE_FAILURE]";
    const record = decisionRecord({
      seq: 3,
      decision: 'degraded',
      degraded: refusal,
      stages: [{ stage: 'relevance', startedAt: 0, endedAt: 1, outcome: `fallback: ${refusal}` }],
    });
    const plain = DecisionRecord.parse({
      ...record,
      seq: 4,
      degraded: 'ModelTimeout: relevance model timed out',
      stages: [],
    });
    const decision = formatDecision(record, null, null);
    expect(decision.match(/configuration error: /g)).toHaveLength(1);
    expect(decision).toContain('configuration error: relevance model answered HTTP 400');
    const inspect = formatInspect(view(), [record, plain]);
    expect(inspect).toContain('Configuration errors');
    expect(inspect).toContain('#3: relevance model answered HTTP 400');
    expect(inspect).not.toContain('#4: ');
    expect(formatInspect(view(), [plain])).not.toContain('Configuration errors');
  });
});

describe('`send --wait` when the live stream missed part of the reply', () => {
  const reply = 'Here is the outline.\nIt has three parts.';

  it('adds the end the stream did not print, or the whole reply when it printed none of it', () => {
    expect(replyBackstop(reply, reply)).toEqual({ rest: '', whole: true });
    expect(replyBackstop(`Checking the files.${reply}`, reply)).toEqual({ rest: '', whole: true });
    expect(replyBackstop('Here is the out', reply)).toEqual({ rest: 'line.\nIt has three parts.', whole: true });
    expect(replyBackstop('Reading.\nHere is the outline.\nIt', reply)).toEqual({
      rest: ' has three parts.',
      whole: true,
    });
    expect(replyBackstop('', reply)).toEqual({ rest: reply, whole: true });
    expect(replyBackstop('Another step said this.', reply)).toEqual({ rest: reply, whole: true });
    // Repeats inside the reply: the longest start that ends the printed text.
    expect(replyBackstop('abab', 'ababab!')).toEqual({ rest: 'ab!', whole: true });
  });

  it('adds nothing when the stream printed the end but lost the start, and then the reply is not whole', () => {
    expect(replyBackstop('outline.\nIt has three parts.', reply)).toEqual({ rest: '', whole: false });
    expect(replyBackstop('anything', '')).toEqual({ rest: '', whole: false });
  });

  it('names the reply printed above instead of repeating it', () => {
    const record = decisionRecord({
      seq: 1,
      decision: 'initialize',
      agent: { outcome: 'replied', reason: null, startedAt: 0, endedAt: 1, steps: 1, toolCalls: [], reply },
    });
    expect(formatDecision(record, null, null)).toContain('reply:\n  Here is the outline.\n  It has three parts.');
    const printed = formatDecision(record, null, null, { replyPrinted: true });
    expect(printed).toContain('reply: printed above');
    expect(printed).not.toContain('three parts');
  });
});
