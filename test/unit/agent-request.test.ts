import { describe, expect, it } from 'vitest';
import { toolResultText } from '../../capabilities/tool-output.js';
import { clipToolOutput } from '../../contract/transcript.js';
import { ToolArgumentValidator } from '../../capabilities/tool-arguments.js';
import { agentRequest, nameTools, transcriptMessages, type ToolOffer } from '../../models/agent-request.js';
import { agentAnswer } from '../../models/openai-models.js';
import type { AgentStepPrompt } from '../../models/roles.js';
import type { TranscriptItem } from '../../contract/transcript.js';

const offer = (tool: string, toolset: string | null = 'files'): ToolOffer => ({
  tool,
  toolset,
  description: `${tool} things`,
  inputSchema: { type: 'object', properties: {} },
  execution: toolset ? 'mcp' : 'builtin',
  requiresApproval: false,
});

describe('nameTools', () => {
  it('keeps safe, free names and makes the others safe and unique', () => {
    const specs = nameTools([
      offer('memory_save', null),
      offer('read_file'),
      offer('read_file', 'mcp-other'),
      offer('memory_save', 'notes'),
      offer('files.list'),
      offer('x'.repeat(80)),
    ]);
    const names = specs.map((s) => s.functionName);
    expect(names.slice(0, 5)).toEqual([
      'memory_save',
      'read_file',
      'mcp-other__read_file',
      'notes__memory_save',
      'files_list',
    ]);
    expect(names[5]).toHaveLength(64);
    for (const name of names) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(new Set(names).size).toBe(names.length);
    expect(specs[2]).toMatchObject({ tool: 'read_file', toolset: 'mcp-other' });
  });
});

describe('transcriptMessages', () => {
  const transcript: TranscriptItem[] = [
    { kind: 'summary', seq: 0, text: 'Earlier: the outline was agreed.' },
    { kind: 'user', seq: 4, text: 'Convert it', resources: [{ uri: 'file:///a.md' }] },
    {
      kind: 'step',
      seq: 4,
      text: null,
      calls: [
        { callId: 'a', tool: 'files.list', arguments: '{}', status: 'ok', output: 'a.md' },
        {
          callId: 'b',
          tool: 'convert',
          arguments: '{"path":',
          status: 'error',
          output: 'arguments are not valid JSON',
        },
        { callId: 'c', tool: 'gone', arguments: '{}', status: 'interrupted', output: 'interrupted' },
      ],
    },
    { kind: 'reply', seq: 4, text: 'Converted.' },
  ];

  it('keeps every call of a step next to its result, in order, and marks results that are not ok', () => {
    const messages = transcriptMessages(transcript, nameTools([offer('files.list')]));
    expect(messages.map((m) => m.role)).toEqual(['user', 'user', 'assistant', 'tool', 'tool', 'tool', 'assistant']);
    expect(messages[0]).toEqual({
      role: 'user',
      content: '[Summary of the earlier conversation]\nEarlier: the outline was agreed.',
    });
    expect(messages[1]).toEqual({ role: 'user', content: 'Convert it\n[resource] file:///a.md' });
    const step = messages[2];
    expect(step).toMatchObject({ role: 'assistant', content: null });
    const calls = step && 'tool_calls' in step ? (step.tool_calls ?? []) : [];
    expect(calls.map((c) => (c.type === 'function' ? [c.id, c.function.name, c.function.arguments] : []))).toEqual([
      ['a', 'files_list', '{}'],
      ['b', 'convert', '{"invalid_arguments":"{\\"path\\":"}'],
      ['c', 'gone', '{}'],
    ]);
    expect(messages.slice(3, 6)).toEqual([
      { role: 'tool', tool_call_id: 'a', content: 'a.md' },
      { role: 'tool', tool_call_id: 'b', content: '[error] arguments are not valid JSON' },
      { role: 'tool', tool_call_id: 'c', content: '[interrupted] interrupted' },
    ]);
  });

  it('puts skills, tools, goals, artifacts, summaries and the decision in that order in one system message, memories apart as data, and tools without $schema', () => {
    const prompt: AgentStepPrompt = {
      sessionId: 's',
      goals: { session: 'Ship the guide', phase: 'Convert it' },
      decision: 'uncertain',
      summaries: [{ phaseIndex: 2, goal: 'Outline', summary: 'Agreed.' }],
      artifacts: [
        {
          uri: 'outline.md',
          kind: 'file',
          source: 'argument',
          tool: 'write_markdown',
          callId: 'call_1',
          seq: 3,
          phaseIndex: 2,
          title: null,
          mimeType: null,
        },
      ],
      transcript,
      skills: [{ id: 'md', name: 'Markdown', instructions: '  Use ATX headings.\n' }],
      memories: [{ id: '1', text: 'Prefers A4.' }],
      tools: nameTools([
        { ...offer('convert'), inputSchema: { $schema: 'x', type: 'object' }, requiresApproval: true },
      ]),
      step: 1,
    };
    const { messages, tools } = agentRequest(prompt);
    expect(messages.filter((m) => m.role === 'system')).toHaveLength(1);
    const system = messages[0]?.content as string;
    expect(system).toContain('Session-wide goal: Ship the guide');
    expect(system).toContain('Current phase goal: Convert it');
    expect(system).toMatch(/"uncertain"\. .*ask the user a short clarifying question/);
    expect(system).toContain('### Phase 2 (goal: Outline)\nAgreed.');
    expect(system).toContain('## Skill: Markdown (md)\nUse ATX headings.');
    expect(system).toContain('- outline.md (file, from write_markdown call call_1, input #3, phase 2)');
    const order = [
      '## Skill: Markdown',
      'Loaded tools: convert',
      'Session-wide goal',
      '- outline.md',
      '### Phase 2',
      'Current phase goal',
      '"uncertain"',
    ];
    const at = order.map((text) => system.indexOf(text));
    expect(at.every((i) => i >= 0)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(system).not.toContain('Prefers A4.');
    expect(messages[1]).toEqual({
      role: 'user',
      content: expect.stringContaining('"text": "Prefers A4."') as string,
    });
    expect(tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'convert',
          description: 'convert things (requires approval)',
          parameters: { type: 'object' },
        },
      },
    ]);
  });
});

describe('agentRequest prefix', () => {
  const base = (over: Partial<AgentStepPrompt>): AgentStepPrompt => ({
    sessionId: 's',
    goals: { session: 'Ship the guide', phase: 'Write it' },
    decision: 'continue',
    summaries: [],
    artifacts: [],
    transcript: [{ kind: 'user', seq: 2, text: 'Go on', resources: [] }],
    skills: [{ id: 'md', name: 'Markdown', instructions: 'Use ATX headings.' }],
    memories: [],
    tools: [],
    step: 1,
    ...over,
  });
  const artifact = (uri: string, seq: number) => ({
    uri,
    kind: 'file' as const,
    source: 'argument' as const,
    tool: 'write_markdown',
    callId: `call_${seq}`,
    seq,
    phaseIndex: 1,
    title: null,
    mimeType: null,
  });

  it('sorts tools by function name, whatever order their toolsets were loaded in', () => {
    const a = nameTools([offer('write', 'b-set'), offer('append', 'a-set'), offer('memory_save', null)]);
    const b = nameTools([offer('memory_save', null), offer('append', 'a-set'), offer('write', 'b-set')]);
    const one = agentRequest(base({ tools: a }));
    const two = agentRequest(base({ tools: b }));
    expect(one.tools.map((t) => t.function.name)).toEqual(['append', 'memory_save', 'write']);
    expect(JSON.stringify(one)).toBe(JSON.stringify(two));
  });

  it('keeps the system message the same across the steps of a turn, though the turn records an artifact', () => {
    const step1 = base({ artifacts: [artifact('old.md', 1)] });
    const step2 = base({
      artifacts: [artifact('old.md', 1), artifact('new.md', 2)],
      transcript: [
        ...step1.transcript,
        {
          kind: 'step',
          seq: 2,
          text: null,
          calls: [
            { callId: 'call_2', tool: 'write_markdown', arguments: '{"path":"new.md"}', status: 'ok', output: 'ok' },
          ],
        },
      ],
      step: 2,
    });
    const [system1] = agentRequest(step1).messages;
    const [system2, ...rest] = agentRequest(step2).messages;
    expect(system2).toEqual(system1);
    expect(system1?.content).toContain('- old.md');
    // The turn's own artifact is in its tool step, not in the system message.
    expect(system1?.content).not.toContain('new.md');
    expect(JSON.stringify(rest)).toContain('new.md');
  });

  it('puts what changes per phase and per input after the Skills and tools', () => {
    const system = (over: Partial<AgentStepPrompt>) => agentRequest(base(over)).messages[0]?.content as string;
    const first = system({ decision: 'initialize' });
    const later = system({ decision: 'new-phase', goals: { session: 'Ship the guide', phase: 'Convert it' } });
    let common = 0;
    while (common < first.length && first[common] === later[common]) common++;
    expect(first.slice(0, common)).toContain('## Skill: Markdown (md)\nUse ATX headings.');
    expect(first.slice(common)).toMatch(/^Write it/);
    // Another Session with the same Skills shares everything up to its own section.
    const other = system({ sessionId: 'other', decision: 'initialize' });
    expect(other.indexOf('## This Session\nYou are the business agent of Session other.')).toBe(
      first.indexOf('## This Session\nYou are the business agent of Session s.'),
    );
    expect(other.slice(0, other.indexOf('## This Session'))).toBe(first.slice(0, first.indexOf('## This Session')));
  });
});

describe('agentAnswer', () => {
  const message = (fields: object) => ({ role: 'assistant' as const, content: null, refusal: null, ...fields });

  it('prefers tool calls, keeps text alongside, and gives calls without ids their own', () => {
    const answer = agentAnswer(
      message({
        content: 'On it.',
        tool_calls: [
          { id: '', type: 'function', function: { name: 'a', arguments: '{}' } },
          { id: 'x', type: 'function', function: { name: 'b', arguments: '' } },
          { id: 'x', type: 'function', function: { name: 'c', arguments: '{}' } },
        ],
      }),
    );
    expect(answer.kind).toBe('calls');
    const calls = answer.kind === 'calls' ? answer.calls : [];
    expect(answer).toMatchObject({ text: 'On it.' });
    expect(calls[0]?.callId).toBe('call_1');
    expect(calls.slice(1)).toEqual([
      { callId: 'x', name: 'b', arguments: '' },
      { callId: 'x_3', name: 'c', arguments: '{}' },
    ]);
  });

  it('reads text as a reply and refuses an answer with neither', () => {
    expect(agentAnswer(message({ content: 'Hello' }))).toEqual({ kind: 'reply', text: 'Hello' });
    expect(() => agentAnswer(message({ content: '  ' }))).toThrow(/neither text nor tool calls/);
  });
});

describe('ToolArgumentValidator', () => {
  const validator = new ToolArgumentValidator();
  const schema = {
    type: 'object',
    properties: { path: { type: 'string', minLength: 1 }, when: { type: 'string', format: 'date' } },
    required: ['path'],
    additionalProperties: false,
  };

  it('accepts fitting arguments and names what does not fit', () => {
    expect(validator.check(schema, '{"path":"a.md","when":"2026-01-31"}')).toBeNull();
    expect(validator.check(schema, '{}')).toMatch(/must have required property 'path'/);
    expect(validator.check(schema, '{"path":"a","extra":1}')).toMatch(/must NOT have additional properties/);
    expect(validator.check(schema, '{"path":"a","when":"yesterday"}')).toMatch(
      /arguments\/when must match format "date"/,
    );
    expect(validator.check(schema, '[1]')).toBe('arguments must be a JSON object');
    expect(validator.check(schema, '{"path"')).toMatch(/not valid JSON/);
  });

  it('follows the dialect a schema names, and treats empty arguments as none', () => {
    const draft2020 = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      prefixItems: [],
      properties: { pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }] } },
    };
    expect(validator.check(draft2020, '{"pair":["a",1]}')).toBeNull();
    expect(validator.check(draft2020, '{"pair":[1,"a"]}')).toMatch(/arguments\/pair\/0 must be string/);
    expect(validator.check({ type: 'object' }, '')).toBeNull();
  });
});

describe('tool output', () => {
  it('clips on a character boundary to the byte budget, with the number of bytes cut', () => {
    const text = '汉'.repeat(100); // 300 bytes
    const clipped = clipToolOutput(text, 64);
    expect(Buffer.byteLength(clipped)).toBeLessThanOrEqual(64);
    const [, kept = '', cut] = /^(汉*)\n…\[clipped: (\d+) bytes\]$/.exec(clipped) ?? [];
    expect(Buffer.byteLength(kept) + Number(cut)).toBe(300);
    expect(clipToolOutput('short', 64)).toBe('short');
  });

  it('joins text parts, describes binary ones, and adds structured content once', () => {
    expect(
      toolResultText({
        content: [
          { type: 'text', text: 'converted' },
          { type: 'image', data: 'AAAA', mimeType: 'image/png' },
          { type: 'resource_link', uri: 'file:///out.docx', name: 'out.docx' },
        ],
        structuredContent: { path: 'out.docx' },
      }),
    ).toBe('converted\n[image: image/png, 3 bytes]\n[resource: file:///out.docx (out.docx)]\n{"path":"out.docx"}');
    expect(
      toolResultText({
        content: [{ type: 'text', text: '{ "path": "out.docx" }' }],
        structuredContent: { path: 'out.docx' },
      }),
    ).toBe('{ "path": "out.docx" }');
  });
});
