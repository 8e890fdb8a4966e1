/**
 * Reasoning content through the real `openai` client: a DeepSeek-style reasoner on 127.0.0.1 streams
 * `reasoning_content` deltas before its tool call, and refuses a tool loop whose earlier tool-calling
 * assistant message lacks its `reasoning_content`, as DeepSeek's thinking mode documents
 * (https://api-docs.deepseek.com/guides/thinking_mode, "Tool Calls").
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenAIModels } from '../../models/openai-models.js';
import { resolveProfiles } from '../../models/provider-profiles.js';
import type { AgentStepPrompt } from '../../models/roles.js';

let server: Server;
let baseURL: string;
const bodies: Array<Record<string, unknown>> = [];

function chunk(delta: Record<string, unknown>, finish: string | null = null): string {
  const body = {
    id: 'c',
    object: 'chat.completion.chunk',
    created: 0,
    model: 'deepseek-reasoner',
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(body)}\n\n`;
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const body = JSON.parse(text) as { messages: Array<Record<string, unknown>>; temperature?: number };
      bodies.push(body);
      const refuse = (message: string) => {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            error: { message, type: 'invalid_request_error', param: null, code: 'invalid_request_error' },
          }),
        );
      };
      const lastUser = body.messages.map((m) => m.role).lastIndexOf('user');
      const loop = body.messages.slice(lastUser + 1);
      if (loop.some((m) => m.role === 'assistant' && m.tool_calls && typeof m.reasoning_content !== 'string')) {
        return refuse('Missing reasoning_content field in the assistant message at message index 2.');
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (loop.length === 0) {
        res.write(chunk({ role: 'assistant', reasoning_content: 'The user wants ' }));
        res.write(chunk({ reasoning_content: 'the file read first.' }));
        res.write(
          chunk({
            tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'read', arguments: '{}' } }],
          }),
        );
        res.write(chunk({}, 'tool_calls'));
      } else {
        res.write(chunk({ role: 'assistant', content: 'Read it.' }));
        res.write(chunk({}, 'stop'));
      }
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const prompt = (transcript: AgentStepPrompt['transcript']): AgentStepPrompt => ({
  sessionId: 's',
  goals: { session: 'g', phase: 'g' },
  decision: 'continue',
  summaries: [],
  transcript,
  skills: [],
  memories: [],
  tools: [
    {
      functionName: 'read',
      tool: 'read',
      toolset: 'files',
      description: 'Reads the file.',
      inputSchema: { type: 'object', properties: {} },
      execution: 'mcp',
      requiresApproval: false,
    },
  ],
  step: 1,
});

describe('a reasoner in a tool loop', () => {
  it('keeps the streamed reasoning with the calls and sends it back on the next step', async () => {
    const models = new OpenAIModels({
      baseURL,
      apiKey: 'test',
      models: { agent: 'deepseek-reasoner' },
      profiles: resolveProfiles({ baseURL: 'https://api.deepseek.com/v1', models: { agent: 'deepseek-reasoner' } }),
    });
    expect(models.profiles.agent.name).toBe('deepseek-reasoner');
    const call = { timeoutMs: 10_000 };
    const user = { kind: 'user' as const, seq: 1, text: 'read it', resources: [] };
    const first = await models.agentStep(prompt([user]), call);
    expect(first).toMatchObject({ kind: 'calls', reasoning: 'The user wants the file read first.' });
    expect(bodies[0]).not.toHaveProperty('temperature');
    if (first.kind !== 'calls') throw new Error('expected calls');
    const step = {
      kind: 'step' as const,
      seq: 1,
      text: null,
      calls: [{ callId: 'call_1', tool: 'read', arguments: '{}', status: 'ok' as const, output: 'contents' }],
      ...(first.reasoning ? { reasoning: first.reasoning } : {}),
    };
    const second = await models.agentStep(prompt([user, step]), call);
    expect(second).toEqual({ kind: 'reply', text: 'Read it.' });
    const assistant = (bodies[1]!.messages as Array<Record<string, unknown>>).find((m) => m.role === 'assistant');
    expect(assistant?.reasoning_content).toBe('The user wants the file read first.');
    // Without the reasoning, the endpoint refuses the loop, and the harness calls it a configuration error.
    const { reasoning: _dropped, ...bare } = step;
    await expect(models.agentStep(prompt([user, bare]), call)).rejects.toMatchObject({ type: 'ModelConfigError' });
  });
});
