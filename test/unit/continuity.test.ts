/**
 * What the Session remembers of its own work, on the pure modules: artifacts collected when a step is
 * sealed, the phase record and its hand-off (model answer and deterministic fallback), a long tool
 * loop cut to fit, and the carried size of a long Session with artifacts.
 */
import { describe, expect, it } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { toolResultResources } from '../../capabilities/tool-output.js';
import { CARRIED_CAP, enforceBudget } from '../../contract/budget.js';
import { CompactionAnswer, CompactionOutput } from '../../contract/activity-contract.js';
import { HANDOFF_BYTES, deterministicHandoff, renderHandoff } from '../../contract/handoff.js';
import { LIMITS, type ActiveTurn, type SessionState } from '../../contract/state.js';
import { jsonBytes, utf8Length } from '../../contract/text.js';
import type { TranscriptItem } from '../../contract/transcript.js';
import { LocalModels } from '../../models/local-models.js';
import { compactionPrompt, compactionResult, HANDOFF_SYSTEM } from '../../models/prompts.js';
import { addArtifacts, artifactsOfCall, isPathLike, type SealedCall } from '../../workflows/agent/artifacts.js';
import { capCarriedState } from '../../workflows/run/carried.js';
import { stubTurnOutputs } from '../../workflows/agent/context-window.js';
import { fallbackSummary, phaseRecord } from '../../workflows/environment/handoff.js';
import { bindNext, intake } from '../../workflows/ledger/intake.js';
import { openPhase } from '../../workflows/environment/phases.js';
import { initialState, restoreState } from '../../workflows/run/state.js';
import { sealStep, startStep } from '../../workflows/agent/tool-calls.js';
import { finishCall } from '../../contract/pending-calls.js';

const call = (over: Partial<SealedCall>): SealedCall => ({
  callId: 'call_1',
  tool: 'write_markdown',
  arguments: '{}',
  status: 'ok',
  output: '',
  ...over,
});

function turnFor(seq: number): ActiveTurn {
  return {
    seq,
    record: {
      seq,
      messageId: `m${seq}`,
      decision: 'continue',
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
    },
    from: null,
    steps: 1,
    step: null,
    failing: null,
    interrupted: false,
  };
}

/** Runs one sealed step of `calls` (each finished with its status, output and resources) for input `seq`. */
function seal(state: SessionState, seq: number, calls: SealedCall[]): void {
  const turn = turnFor(seq);
  startStep(
    turn,
    null,
    calls.map((c) => ({
      callId: c.callId,
      tool: c.tool,
      arguments: c.arguments,
      toolset: 'mcp-doc-convert',
      execution: 'mcp' as const,
      requiresApproval: false,
      argumentError: null,
      policy: null,
    })),
  );
  turn.step?.calls.forEach((pending, i) => {
    const c = calls[i]!;
    finishCall(pending, c.status as 'ok' | 'error', c.output, c.resources);
  });
  sealStep(state, turn);
}

describe('artifacts', () => {
  it('takes paths from the arguments of writing tools only, and only when the call succeeded', () => {
    const args = JSON.stringify({ path: 'comfyui-guide.md', content: '# Guide' });
    expect(artifactsOfCall(call({ arguments: args }), 1, 0)).toEqual([
      expect.objectContaining({ uri: 'comfyui-guide.md', kind: 'file', source: 'argument', tool: 'write_markdown' }),
    ]);
    expect(artifactsOfCall(call({ arguments: args, status: 'error' }), 1, 0)).toEqual([]);
    // A converter's inputPath names what it read; read_file's path too.
    expect(artifactsOfCall(call({ tool: 'read_file', arguments: args }), 1, 0)).toEqual([]);
    expect(artifactsOfCall(call({ tool: 'markdown_to_docx', arguments: '{"inputPath":"a.md"}' }), 1, 0)).toEqual([]);
  });

  it('takes paths and URIs from structured results and MCP resources, one entry per uri', () => {
    const output =
      'Wrote guide.docx (900 bytes) from guide.md.\n{"outputPath":"guide.docx","bytes":900,"files":[{"uri":"https://example.com/x"}]}';
    const found = artifactsOfCall(
      call({
        tool: 'markdown_to_docx',
        output,
        resources: [{ uri: 'file:///w/guide.docx', title: 'Guide', mimeType: 'application/vnd.openxmlformats' }],
      }),
      4,
      2,
    );
    expect(found.map((a) => [a.uri, a.kind, a.source])).toEqual([
      ['file:///w/guide.docx', 'resource', 'resource'],
      ['guide.docx', 'file', 'result'],
      ['https://example.com/x', 'uri', 'result'],
    ]);
    expect(found[0]).toMatchObject({ seq: 4, phaseIndex: 2, title: 'Guide', callId: 'call_1' });
    expect(isPathLike('just some words')).toBe(false);
    expect(isPathLike('notes/today')).toBe(true);
    expect(isPathLike('line one\nline two.md')).toBe(false);
  });

  it('keeps one entry per uri (the newest moves to the end) and at most LIMITS.artifacts', () => {
    const state = initialState({ sessionId: 'a', goals: { session: 'g' } });
    seal(state, 1, [call({ arguments: '{"path":"a.md"}' }), call({ callId: 'c2', arguments: '{"path":"b.md"}' })]);
    seal(state, 2, [call({ callId: 'c3', arguments: '{"path":"a.md"}' })]);
    expect(state.artifacts.map((a) => [a.uri, a.callId, a.seq])).toEqual([
      ['b.md', 'c2', 1],
      ['a.md', 'c3', 2],
    ]);
    const many = Array.from({ length: LIMITS.artifacts + 5 }, (_, i) => ({ ...state.artifacts[0]!, uri: `f${i}.md` }));
    addArtifacts(state, many);
    expect(state.artifacts).toHaveLength(LIMITS.artifacts);
    expect(state.artifacts.at(-1)?.uri).toBe(`f${LIMITS.artifacts + 4}.md`);
  });

  it('finds resource links and embedded resources in an MCP result', () => {
    const result = {
      content: [
        { type: 'text', text: 'done' },
        { type: 'resource_link', uri: 'file:///w/a.md', name: 'a.md', mimeType: 'text/markdown' },
        { type: 'resource', resource: { uri: 'mem://notes/1', text: 'x' } },
        { type: 'resource_link', uri: 'file:///w/a.md', name: 'again' },
      ],
    } as CallToolResult;
    expect(toolResultResources(result)).toEqual([
      { uri: 'file:///w/a.md', title: 'a.md', mimeType: 'text/markdown' },
      { uri: 'mem://notes/1' },
    ]);
  });
});

/** A Session whose phase 0 wrote a guide and whose phase 1 has just opened. */
function twoPhases(): SessionState {
  const state = initialState({ sessionId: 'h' });
  intake(state, { messageId: 'm1', text: 'Research ComfyUI and deliver a complete Markdown guide' }, 'signal', 1);
  const first = bindNext(state, 1)!;
  openPhase(state, { text: first.text, resources: [], setAtSeq: first.seq }, 'open');
  first.phaseIndex = 0;
  state.transcript.push({ kind: 'user', seq: 1, text: first.text, resources: [] });
  seal(state, 1, [
    call({
      callId: 'call_w',
      arguments: JSON.stringify({ path: 'comfyui-guide.md', content: '# ComfyUI' }),
      output: 'Wrote comfyui-guide.md (9 bytes).',
    }),
  ]);
  state.transcript.push({ kind: 'reply', seq: 1, text: 'The guide is in comfyui-guide.md.' });
  intake(state, { messageId: 'm2', text: 'Convert the Markdown we just created to Word' }, 'signal', 2);
  const second = bindNext(state, 2)!;
  openPhase(state, { text: second.text, resources: [], setAtSeq: second.seq }, 'open');
  second.phaseIndex = 1;
  return state;
}

describe('the phase hand-off', () => {
  it('hands the compaction role the whole phase record: inputs, replies, tool calls and artifacts', () => {
    const state = twoPhases();
    const record = phaseRecord(state, state.phases[0]!);
    expect(record).toEqual({
      phaseGoal: 'Research ComfyUI and deliver a complete Markdown guide',
      inputs: ['Research ComfyUI and deliver a complete Markdown guide'],
      replies: ['The guide is in comfyui-guide.md.'],
      toolCalls: [expect.objectContaining({ tool: 'write_markdown', callId: 'call_w', seq: 1, status: 'ok' })],
      artifacts: [{ uri: 'comfyui-guide.md', kind: 'file', tool: 'write_markdown', callId: 'call_w', seq: 1 }],
    });
    expect(compactionPrompt(record).system).toBe(HANDOFF_SYSTEM);
    // The fallback names the artifact and quotes the goal from the record.
    const fallback = fallbackSummary(record);
    expect(fallback).toContain('Phase goal: Research ComfyUI and deliver a complete Markdown guide');
    expect(fallback).toContain('- comfyui-guide.md — file from write_markdown (call call_w, input #1)');
    expect(fallback).toContain('last reply: The guide is in comfyui-guide.md.');
  });

  it('renders a structured model answer with the request’s own goal, bounded, and reads old answers', () => {
    const state = twoPhases();
    const record = phaseRecord(state, state.phases[0]!);
    const answer = CompactionAnswer.parse({
      produced: [{ what: 'the Markdown guide', artifact: 'comfyui-guide.md' }],
      decisions: null,
      constraints: ['complete guide'],
      openQuestions: [],
      nextSteps: ['x'.repeat(10_000)],
      summary: null,
    });
    const result = compactionResult(record, answer);
    expect(result.summary).toMatch(/^Phase goal: Research ComfyUI/);
    expect(result.summary).toContain('- comfyui-guide.md — the Markdown guide');
    expect(utf8Length(result.summary)).toBeLessThanOrEqual(HANDOFF_BYTES);
    expect(CompactionOutput.parse(result)).toEqual(result);
    // Results recorded before hand-offs carry a summary alone.
    expect(CompactionOutput.parse({ summary: 'old' })).toEqual({ summary: 'old' });
    expect(CompactionAnswer.safeParse({}).success).toBe(false);
    expect(compactionResult({ phaseGoal: 'g', inputs: ['a'] }, { summary: 'plain' })).toEqual({ summary: 'plain' });
  });

  it('is what the offline provider answers for a phase record', async () => {
    const state = twoPhases();
    const record = phaseRecord(state, state.phases[0]!);
    const local = await new LocalModels().compact(record);
    expect(local.summary).toBe(fallbackSummary(record));
    expect(local.handoff).toEqual(deterministicHandoff(record));
  });

  it('says what failed and what the agent asked', () => {
    const handoff = deterministicHandoff({
      phaseGoal: 'g',
      inputs: ['g', 'use A4 paper'],
      replies: ['Which file should I convert?'],
      toolCalls: [{ tool: 'convert', callId: 'c', seq: 2, arguments: '{}', status: 'error', result: 'no such file' }],
      artifacts: [],
    });
    expect(handoff.constraints).toEqual(['use A4 paper']);
    expect(handoff.openQuestions).toEqual([
      'convert error: no such file',
      'asked the user: Which file should I convert?',
    ]);
    expect(renderHandoff('g', handoff)).toContain('User constraints:\n- use A4 paper');
  });
});

describe('a long tool loop inside one turn', () => {
  const step = (seq: number, n: number): TranscriptItem => ({
    kind: 'step',
    seq,
    text: null,
    calls: [{ callId: `c${n}`, tool: 'search', arguments: '{"q":"x"}', status: 'ok', output: 'r'.repeat(6_000) }],
  });

  it('cuts the turn’s oldest tool results to stubs until it fits, never the newest step', () => {
    const items: TranscriptItem[] = [
      { kind: 'user', seq: 5, text: 'go', resources: [] },
      ...Array.from({ length: 10 }, (_, i) => step(5, i)),
    ];
    const budget = 20_000;
    expect(jsonBytes(items)).toBeGreaterThan(budget);
    const cut = stubTurnOutputs(items, 5, budget);
    expect(jsonBytes(cut)).toBeLessThanOrEqual(budget);
    expect(cut.at(-1)).toEqual(items.at(-1));
    const first = cut[1];
    expect(first?.kind === 'step' && first.calls[0]?.output).toMatch(/…\[clipped: \d+ bytes\]$/);
    // Only as much as needed: the later steps before the newest may stay whole.
    expect(cut.filter((item, i) => item !== items[i]).length).toBeLessThan(9);
    expect(stubTurnOutputs(items.slice(0, 2), 5, budget)).toEqual(items.slice(0, 2));
  });
});

describe('a long Session with artifacts', () => {
  it('carries 2,000 inputs, each writing a file, under the cap', () => {
    const state = initialState({ sessionId: 'long', goals: { session: 'Write guides' } });
    for (let i = 1; i <= 2_000; i++) {
      intake(
        state,
        { messageId: `m${i}`, text: `Write guide number ${i} about topic ${i}`.padEnd(400, '.') },
        'signal',
        i,
      );
      const bound = bindNext(state, i)!;
      if (i % 100 === 1) openPhase(state, { text: bound.text, resources: [], setAtSeq: bound.seq }, 'open');
      bound.phaseIndex = state.phases.at(-1)!.index;
      state.transcript.push({ kind: 'user', seq: i, text: bound.text, resources: [] });
      seal(state, i, [
        call({
          callId: `call_${i}`,
          arguments: JSON.stringify({ path: `guides/topic-${i}/guide-${i}.md`, content: 'x'.repeat(2_000) }),
          output: `Wrote guides/topic-${i}/guide-${i}.md\n{"path":"guides/topic-${i}/guide-${i}.md","bytes":2000}`,
        }),
      ]);
      state.transcript.push({ kind: 'reply', seq: i, text: `Done: guides/topic-${i}/guide-${i}.md`.padEnd(300, '.') });
      // The Session trims after every input; every 20th keeps this test fast and bounds the same.
      if (i % 20 === 0) enforceBudget(state);
    }
    const size = capCarriedState(state);
    console.log(
      `carried state after 2,000 inputs with artifacts: ${size} bytes (cap ${CARRIED_CAP}); ` +
        `artifacts ${state.artifacts.length} (${jsonBytes(state.artifacts)} bytes), transcript ${jsonBytes(state.transcript)} bytes`,
    );
    expect(size).toBeLessThanOrEqual(CARRIED_CAP);
    expect(state.artifacts).toHaveLength(LIMITS.artifacts);
    expect(state.artifacts.at(-1)).toMatchObject({ uri: 'guides/topic-2000/guide-2000.md', seq: 2000 });
    expect(restoreState(JSON.parse(JSON.stringify(state))).ok).toBe(true);
  });

  it('restores carried state from before artifacts with an empty list', () => {
    const { artifacts: _gone, ...old } = initialState({ sessionId: 'old' });
    const restored = restoreState(JSON.parse(JSON.stringify(old)));
    expect(restored.ok && restored.state.artifacts).toEqual([]);
  });
});
