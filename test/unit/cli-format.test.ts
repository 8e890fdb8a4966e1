import { describe, expect, it } from 'vitest';
import { formatInspect, formatTree } from '../../cli/format.js';
import { initialState } from '../../workflows/state.js';
import { buildView, renderDetails } from '../../workflows/view.js';

function view(parent?: string, children: Array<{ sessionId: string; goal: string; routed: number }> = []) {
  const state = initialState({ sessionId: 'research', ...(parent ? { parentSessionId: parent } : {}) });
  state.children = children.map((c, i) => ({ ...c, createdAtSeq: i + 1, lastRoutedSeq: i + 1 }));
  return buildView(state, 'Idle');
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
      "   ├─ research.sub-aaaa  Also check tomorrow's weather · 2 requests",
      '   └─ research.sub-bbbb  Book the venue · 1 request',
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
