/**
 * The provider emulators (test/support/provider-emulators): each refuses the request the harness sent
 * before provider profiles (negative), and takes every role's request as the harness now shapes it
 * for that profile (the start-up check's `probe`, and an agent tool loop): 0 refused requests.
 */
import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { OpenAIModels } from '../models/openai-models.js';
import { resolveProfiles, type ProviderName } from '../models/provider-profiles.js';
import { ROLES, type AgentStepPrompt } from '../models/roles.js';
import { EXTRACTION_SYSTEM, HANDOFF_SYSTEM, ORCHESTRATION_SYSTEM, UNDERSTANDING_SYSTEM } from '../models/prompts.js';
import { EMULATORS, type Emulator } from './support/provider-emulators/index.js';
import { startVllm } from './support/provider-emulators/vllm.js';
import type { Handler, RecordedRequest } from './support/model-server.js';

const started: Emulator[] = [];
async function start(make: () => Promise<Emulator>): Promise<Emulator> {
  const emulator = await make();
  started.push(emulator);
  return emulator;
}
afterAll(async () => {
  await Promise.all(started.map((e) => e.close()));
});

/** POSTs a raw body, as the harness's client did, and gives the status and JSON answer. */
async function post(emulator: Emulator, body: unknown, path = '/chat/completions') {
  const res = await fetch(`${emulator.baseURL}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

// The request shapes the harness sent before provider profiles (models/openai-models.ts at ed9d528).
const OLD_HELPER = {
  model: 'm',
  messages: [
    { role: 'system', content: 'Answer with a JSON object {"phaseRelevance": number, "sessionRelevance": number}.' },
    { role: 'user', content: '{"message":"hello"}' },
  ],
  response_format: { type: 'json_object' },
  temperature: 0,
  max_tokens: 512,
};
const OLD_HELPER_JSON_SCHEMA = {
  ...OLD_HELPER,
  response_format: {
    type: 'json_schema',
    json_schema: {
      name: 'relevance_output',
      strict: true,
      schema: {
        type: 'object',
        properties: { phaseRelevance: { type: 'number' } },
        required: ['phaseRelevance'],
        additionalProperties: false,
      },
    },
  },
};
const tool = (description: string) => ({
  type: 'function',
  function: { name: 'markdown_to_docx', description, parameters: { type: 'object', properties: {} } },
});
const OLD_AGENT = {
  model: 'm',
  tools: [tool('Convert Markdown to Word.')],
  messages: [
    { role: 'system', content: 'You are the business agent.' },
    { role: 'user', content: 'Convert guide.md to Word' },
  ],
  temperature: 0.3,
  stream: true,
  stream_options: { include_usage: true },
};

describe('provider emulators refuse the requests the harness sent before provider profiles', () => {
  it('openai: a tool description over 1,024 characters, grown by " (requires approval)"', async () => {
    const openai = await start(EMULATORS['openai']!);
    const { status, body } = await post(openai, {
      ...OLD_AGENT,
      tools: [tool(`${'x'.repeat(1020)} (requires approval)`)],
    });
    expect(status).toBe(400);
    expect(body).toMatchObject({
      error: { type: 'invalid_request_error', code: 'string_above_max_length', param: 'tools[0].function.description' },
    });
  });

  it('openai-reasoning: max_tokens and temperature 0 on every helper call, temperature 0.3 on the agent', async () => {
    const reasoning = await start(EMULATORS['openai-reasoning']!);
    const helper = await post(reasoning, OLD_HELPER);
    expect(helper.status).toBe(400);
    expect(helper.body).toMatchObject({ error: { param: 'max_tokens', code: 'unsupported_parameter' } });
    const agent = await post(reasoning, OLD_AGENT);
    expect(agent.body).toMatchObject({ error: { param: 'temperature', code: 'unsupported_value' } });
    const effort = await post(reasoning, { ...OLD_AGENT, temperature: 1, reasoning_effort: 'extreme' });
    expect(effort.body).toMatchObject({ error: { param: 'reasoning_effort', code: 'invalid_value' } });
  });

  it('azure-openai: the long tool description, and a deployment path without api-version', async () => {
    const azure = await start(EMULATORS['azure-openai']!);
    const long = await post(azure, { ...OLD_AGENT, tools: [tool('y'.repeat(1100))] });
    expect(long.status).toBe(400);
    const root = azure.baseURL.replace(/\/openai\/v1$/, '');
    const res = await fetch(`${root}/openai/deployments/gpt-4o-mini/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(OLD_HELPER),
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { code: '404', message: 'Resource not found' } });
  });

  it('deepseek: HARNESS_JSON_MODE=json_schema', async () => {
    const deepseek = await start(EMULATORS['deepseek']!);
    const { status, body } = await post(deepseek, OLD_HELPER_JSON_SCHEMA);
    expect(status).toBe(400);
    expect(body).toMatchObject({
      error: { message: expect.stringContaining('json_schema'), param: 'response_format' },
    });
  });

  it('deepseek-reasoner: the step after a tool call, with the reasoning dropped', async () => {
    const reasoner = await start(EMULATORS['deepseek-reasoner']!);
    const call = { id: 'call_1', type: 'function', function: { name: 'markdown_to_docx', arguments: '{}' } };
    const afterTool = {
      ...OLD_AGENT,
      messages: [
        ...OLD_AGENT.messages,
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: 'call_1', content: 'Wrote guide.docx' },
      ],
    };
    const { status, body } = await post(reasoner, afterTool);
    expect(status).toBe(400);
    expect(body).toMatchObject({ error: { message: expect.stringContaining('reasoning_content') } });
    // Carried back, the same request is taken.
    const messages = afterTool.messages.map((m) => ('tool_calls' in m ? { ...m, reasoning_content: 'why' } : m));
    reasoner.server.on('m', { content: 'Done.' });
    expect((await post(reasoner, { ...afterTool, stream: false, stream_options: undefined, messages })).status).toBe(
      200,
    );
  });

  it('vllm: tools to a server started without --enable-auto-tool-choice, two user messages in a row', async () => {
    const plain = await start(() => startVllm({ toolCalling: false }));
    const tools = await post(plain, OLD_AGENT);
    expect(tools.status).toBe(400);
    expect(tools.body).toMatchObject({
      error: { type: 'BadRequestError', code: 400, message: expect.stringContaining('--enable-auto-tool-choice') },
    });
    const vllm = await start(EMULATORS['vllm']!);
    const twoUsers = await post(vllm, {
      ...OLD_AGENT,
      messages: [...OLD_AGENT.messages, { role: 'user', content: 'Recalled memory: use A4 paper.' }],
    });
    expect(twoUsers.status).toBe(400);
    expect(twoUsers.body).toMatchObject({
      error: { message: expect.stringContaining('Conversation roles must alternate') },
    });
  });

  it('vllm: the agent step refused for the tool flags is a configuration error that names them, in either error body', async () => {
    for (const legacyErrorBody of [false, true]) {
      const plain = await start(() => startVllm({ toolCalling: false, legacyErrorBody }));
      const models = harnessModels(plain, 'vllm');
      await expect(models.agentStep(agentPrompt(), { timeoutMs: 10_000 })).rejects.toMatchObject({
        type: 'ModelConfigError',
        message: expect.stringMatching(/tool choice requires --enable-auto-tool-choice.*; fix: start vLLM with/),
      });
    }
  });

  it('ollama: calls streamed without index are lost by the client stream the agent step used', async () => {
    const ollama = await start(EMULATORS['ollama']!);
    const calls = [
      { id: 'call_a', name: 'add', arguments: { a: 1 } },
      { id: 'call_b', name: 'add', arguments: { a: 2 } },
    ];
    ollama.server.on('m', { toolCalls: calls });
    const client = new OpenAI({ baseURL: ollama.baseURL, apiKey: 'x', maxRetries: 0 });
    const before = await client.chat.completions
      .stream({ model: 'm', messages: [{ role: 'user', content: 'add' }] })
      .finalChatCompletion()
      .then(
        (c) => c.choices[0]?.message.tool_calls?.length ?? 0,
        () => 0,
      );
    expect(before).toBeLessThan(2);
    // The stream assembly keeps both.
    const models = harnessModels(ollama, 'ollama');
    ollama.server.on('agent-model', { toolCalls: calls });
    const step = await models.agentStep(agentPrompt(), { timeoutMs: 10_000 });
    expect(step).toMatchObject({ kind: 'calls', calls: [{ callId: 'call_a' }, { callId: 'call_b' }] });
  });

  it('generic: json_schema, tool_choice and max_completion_tokens', async () => {
    const generic = await start(EMULATORS['generic']!);
    expect((await post(generic, OLD_HELPER_JSON_SCHEMA)).status).toBe(400);
    expect((await post(generic, { ...OLD_AGENT, tool_choice: 'auto' })).body).toMatchObject({
      error: { param: 'tool_choice' },
    });
    expect((await post(generic, { ...OLD_HELPER, max_tokens: undefined, max_completion_tokens: 5 })).status).toBe(400);
  });
});

/** Honest helper answers: what each role's request asks for, from what the request holds. */
const helpers: Handler = (req: RecordedRequest) => {
  const system = req.messages.find((m) => m.role === 'system')?.content ?? '';
  const user = req.messages.find((m) => m.role === 'user')?.content ?? '';
  const words = user.toLowerCase().match(/[a-z]{3,}/g) ?? [];
  if (system === UNDERSTANDING_SYSTEM) return { json: { phaseRelevance: 0.9, sessionRelevance: 0.9, terms: words } };
  if (system === EXTRACTION_SYSTEM) return { json: { terms: words } };
  if (system === ORCHESTRATION_SYSTEM) return { json: { skills: [], toolsets: [], memories: [] } };
  if (system === HANDOFF_SYSTEM) return { json: { produced: [], decisions: [], nextSteps: [] } };
  return { json: { summary: user.slice(0, 200) || '-' } };
};

/** The agent: calls `harness_check`'s sibling tool when it is offered and asked to, else replies; reasoning from the request. */
const agent: Handler = (req) => {
  const last = req.messages.at(-1);
  const asked = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  const reasoning = `The user wrote: ${asked.slice(0, 60)}`;
  if (last?.role === 'tool') return { content: `Done: ${last.content}`, reasoning };
  if (/call the tool/i.test(asked) && req.tools.some((t) => t.name === 'add'))
    return { toolCalls: [{ name: 'add', arguments: { a: 1, b: 2 } }], reasoning };
  return { content: 'ok', reasoning };
};

function harnessModels(emulator: Emulator, provider: ProviderName): OpenAIModels {
  const models = Object.fromEntries(ROLES.map((r) => [r, r === 'agent' ? 'agent-model' : 'helper-model']));
  emulator.server.on('helper-model', helpers).on('agent-model', agent);
  return new OpenAIModels({
    baseURL: emulator.baseURL,
    apiKey: 'test',
    models,
    profiles: resolveProfiles({ baseURL: emulator.baseURL, models, provider }),
  });
}

function agentPrompt(transcript: AgentStepPrompt['transcript'] = []): AgentStepPrompt {
  return {
    sessionId: 's',
    goals: { session: 'Add numbers', phase: 'Add numbers' },
    decision: 'continue',
    summaries: [],
    transcript: [{ kind: 'user', seq: 1, text: 'Add 1 and 2; call the tool.', resources: [] }, ...transcript],
    skills: [],
    memories: [],
    tools: [
      {
        functionName: 'add',
        tool: 'add',
        toolset: null,
        description: `Adds two numbers. ${'Long description. '.repeat(80)}`,
        inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
        execution: 'builtin',
        requiresApproval: true,
      },
    ],
    step: 1,
  };
}

describe('provider emulators take the requests the harness now shapes for their profile', () => {
  for (const provider of Object.keys(EMULATORS) as ProviderName[]) {
    it(`${provider}: every role's check request, and an agent tool loop, with 0 refused`, async () => {
      const emulator = await start(EMULATORS[provider]!);
      const models = harnessModels(emulator, provider);
      for (const role of ROLES) await models.probe(role, { timeoutMs: 10_000 });
      const first = await models.agentStep(agentPrompt(), { timeoutMs: 10_000 });
      expect(first.kind).toBe('calls');
      if (first.kind !== 'calls') return;
      const call = first.calls[0]!;
      const second = await models.agentStep(
        agentPrompt([
          {
            kind: 'step',
            seq: 1,
            text: first.text,
            ...(first.reasoning !== undefined ? { reasoning: first.reasoning } : {}),
            calls: [{ callId: call.callId, tool: 'add', arguments: call.arguments, status: 'ok', output: '3' }],
          },
        ]),
        { timeoutMs: 10_000 },
      );
      expect(second).toMatchObject({ kind: 'reply', text: 'Done: 3' });
      expect(emulator.server.refused().map((r) => JSON.stringify(r.reply))).toEqual([]);
    });
  }
});
