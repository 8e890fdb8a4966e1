import { describe, expect, it } from 'vitest';
import { StreamAssembly } from '../../models/stream-assembly.js';

/** A `chat.completion.chunk` whose first choice carries `delta`. */
const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  object: 'chat.completion.chunk',
  model: 'm',
  choices: [{ index: 0, delta, finish_reason: null }],
  ...extra,
});
const call = (fields: Record<string, unknown>) => ({ tool_calls: [fields] });

function assemble(chunks: unknown[], prefix = '3') {
  const assembly = new StreamAssembly(prefix);
  for (const c of chunks) assembly.push(c);
  return assembly.result();
}

describe('StreamAssembly', () => {
  it('assembles calls by index, as OpenAI streams them', () => {
    const done = assemble([
      chunk({ role: 'assistant', content: '' }),
      chunk(call({ index: 0, id: 'call_a', type: 'function', function: { name: 'read', arguments: '' } })),
      chunk(call({ index: 0, function: { arguments: '{"pa' } })),
      chunk(call({ index: 1, id: 'call_b', type: 'function', function: { name: 'write', arguments: '{}' } })),
      chunk(call({ index: 0, function: { arguments: 'th":"x"}' } })),
      { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
      { choices: [], usage: { prompt_tokens: 10, completion_tokens: 4 } },
    ]);
    expect(done.toolCalls.map(({ id, name, arguments: a }) => ({ id, name, a }))).toEqual([
      { id: 'call_a', name: 'read', a: '{"path":"x"}' },
      { id: 'call_b', name: 'write', a: '{}' },
    ]);
    expect(done).toMatchObject({ content: '', finishReason: 'tool_calls', usage: { prompt_tokens: 10 }, chunks: 7 });
  });

  it('keeps calls that come without index, each whole with its id (older Ollama)', () => {
    const done = assemble([
      chunk({
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'call_x', function: { name: 'a', arguments: '{"n":1}' } }],
      }),
      chunk(call({ id: 'call_y', function: { name: 'b', arguments: '{"n":2}' } })),
      chunk({ content: '' }, { choices: [{ index: 0, delta: { content: '' }, finish_reason: 'tool_calls' }] }),
    ]);
    expect(done.toolCalls.map((c) => [c.id, c.name, c.arguments])).toEqual([
      ['call_x', 'a', '{"n":1}'],
      ['call_y', 'b', '{"n":2}'],
    ]);
  });

  it('continues the latest call by order when a delta has neither index nor id, and a new name starts a call', () => {
    const done = assemble([
      chunk(call({ function: { name: 'a', arguments: '{"n"' } })),
      chunk(call({ function: { arguments: ':1}' } })),
      chunk(call({ function: { name: 'b', arguments: '{}' } })),
    ]);
    expect(done.toolCalls.map((c) => [c.name, c.arguments])).toEqual([
      ['a', '{"n":1}'],
      ['b', '{}'],
    ]);
  });

  it('makes two calls of two ids streamed at the same index, not one with both arguments', () => {
    const done = assemble([
      chunk(call({ index: 0, id: 'call_1', function: { name: 'a', arguments: '{"x":' } })),
      chunk(call({ index: 0, function: { arguments: '1}' } })),
      chunk(call({ index: 0, id: 'call_2', function: { name: 'b', arguments: '{"y":' } })),
      chunk(call({ index: 0, function: { arguments: '2}' } })),
    ]);
    expect(done.toolCalls.map((c) => [c.id, c.name, c.arguments])).toEqual([
      ['call_1', 'a', '{"x":1}'],
      ['call_2', 'b', '{"y":2}'],
    ]);
  });

  it('gives a call without id a deterministic id from the prefix and its position', () => {
    const chunks = [
      chunk(call({ index: 0, id: 'call_k', function: { name: 'a', arguments: '{}' } })),
      chunk(call({ index: 1, function: { name: 'b', arguments: '{}' } })),
    ];
    const first = assemble(chunks, '7');
    expect(first.toolCalls.map((c) => [c.id, c.madeId])).toEqual([
      ['call_k', false],
      ['call_7_2', true],
    ]);
    // A retried step that gets the same answer names the call the same.
    expect(assemble(chunks, '7').toolCalls[1]?.id).toBe('call_7_2');
  });

  it('keeps reasoning deltas apart from the text, under either field name', () => {
    const assembly = new StreamAssembly('1');
    expect(assembly.push(chunk({ role: 'assistant', reasoning_content: 'Think' }))).toEqual({
      text: '',
      reasoning: 'Think',
    });
    assembly.push(chunk({ reasoning: 'ing.' }));
    expect(assembly.push(chunk({ content: 'Hi' }))).toEqual({ text: 'Hi', reasoning: '' });
    assembly.push(chunk({ content: ' there', reasoning_content: null }));
    expect(assembly.result()).toMatchObject({ content: 'Hi there', reasoning: 'Thinking.', toolCalls: [] });
  });

  it('reads a whole completion the same way (a server that answers a stream request with JSON)', () => {
    const assembly = new StreamAssembly('2');
    const piece = assembly.pushCompletion({
      model: 'm',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'ok',
            reasoning_content: 'why',
            tool_calls: [
              { type: 'function', function: { name: 'a', arguments: '{}' } },
              { type: 'function', function: { name: 'b', arguments: '{}' } },
            ],
          },
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 3, completion_tokens: 1 },
    });
    expect(piece).toEqual({ text: 'ok', reasoning: 'why' });
    expect(assembly.result()).toMatchObject({
      content: 'ok',
      reasoning: 'why',
      finishReason: 'tool_calls',
      usage: { prompt_tokens: 3 },
      toolCalls: [
        { id: 'call_2_1', name: 'a' },
        { id: 'call_2_2', name: 'b' },
      ],
    });
  });

  it('counts no chunks for an empty stream, and ignores what is not a chunk', () => {
    const assembly = new StreamAssembly('1');
    assembly.push('garbage');
    expect(assembly.result()).toMatchObject({ chunks: 0, content: null, reasoning: null, toolCalls: [] });
  });
});
