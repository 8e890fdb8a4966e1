/**
 * The OpenAI-compatible role models against the scripted server: request shape, JSON modes, output
 * validation and the mapping of every failure to a typed ApplicationFailure.
 */
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseModelJson, retryAfterMs } from '../models/model-errors.js';
import { DEFAULT_MAX_TOKENS, OpenAIModels, type OpenAIModelsConfig } from '../models/openai-models.js';
import { OrchestrationOutput } from '../contract/activity-contract.js';
import { RelevanceScores } from '../contract/relevance.js';
import { FAILURE } from '../contract/failures.js';
import { UNDERSTANDING_SYSTEM, relevancePrompt } from '../models/prompts.js';
import { ScriptedModelServer, faults } from './support/model-server.js';
import { resolveProfiles } from '../models/provider-profiles.js';

let server: ScriptedModelServer;
const call = { timeoutMs: 1_000 };
const request = {
  message: { text: 'Convert the Markdown we just created to Word', resources: [] },
  phaseGoal: 'Research ComfyUI and deliver a Markdown guide',
  sessionGoal: 'Research ComfyUI and deliver a Markdown guide',
};

function models(
  jsonMode: 'json_object' | 'json_schema' = 'json_object',
  roles: OpenAIModelsConfig['models'] = { relevance: 'judge' },
) {
  return new OpenAIModels({ baseURL: server.baseURL, apiKey: 'test', models: roles, jsonMode });
}

async function failure(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApplicationFailure);
  return error as ApplicationFailure;
}

beforeAll(async () => {
  server = await ScriptedModelServer.start();
});

afterAll(async () => {
  await server?.close();
});

describe('OpenAIModels', () => {
  it('asks for a JSON object with temperature 0 and validates the answer', async () => {
    server.enqueue('judge', {
      json: { phaseRelevance: 0.1, sessionRelevance: 0.9, rationale: 'extra keys are dropped' },
    });
    expect(await models().relevance(request, call)).toEqual({ phaseRelevance: 0.1, sessionRelevance: 0.9 });
    const sent = server.requests('judge').at(-1)!;
    expect(sent.body.response_format).toEqual({ type: 'json_object' });
    expect(sent.body.temperature).toBe(0);
    expect(sent.messages.map((m) => m.role)).toEqual(['system', 'user']);
  });

  it('sends a strict JSON schema derived from the output contract in json_schema mode', async () => {
    server.enqueue('judge', { json: { phaseRelevance: 1, sessionRelevance: 1 } });
    await models('json_schema').relevance(request, call);
    const format = server.requests('judge').at(-1)!.body.response_format as {
      type: string;
      json_schema: { strict: boolean; schema: { properties: Record<string, unknown>; required: string[] } };
    };
    expect(format.type).toBe('json_schema');
    expect(format.json_schema.strict).toBe(true);
    expect(Object.keys(format.json_schema.schema.properties)).toEqual(['phaseRelevance', 'sessionRelevance']);
    expect(format.json_schema.schema.required).toEqual(['phaseRelevance', 'sessionRelevance']);
    expect(format.json_schema.schema).toMatchObject({ additionalProperties: false });
  });

  it('judges relevance, extracts terms and states the task in one call (understand), under the relevance model', async () => {
    server.enqueue('judge', {
      json: {
        phaseRelevance: 0.2,
        sessionRelevance: 0.8,
        terms: [' docx ', 'word', 'docx'],
        goal: 'Convert the guide to Word',
        refines: false,
      },
    });
    expect(await models('json_schema').understand(request, call)).toEqual({
      phaseRelevance: 0.2,
      sessionRelevance: 0.8,
      terms: ['docx', 'word'],
      goal: 'Convert the guide to Word',
      refines: false,
    });
    const sent = server.requests('judge').at(-1)!;
    expect(sent.messages[0]?.content).toBe(UNDERSTANDING_SYSTEM);
    // The user message is the relevance request's: the combined call sees nothing relevance may not.
    expect(sent.messages[1]?.content).toBe(relevancePrompt(request).user);
    expect(sent.body.max_tokens).toBe(DEFAULT_MAX_TOKENS.relevance);
    const format = sent.body.response_format as { json_schema: { name: string; schema: Record<string, unknown> } };
    expect(format.json_schema.name).toBe('understanding_output');
    expect(format.json_schema.schema).toMatchObject({
      additionalProperties: false,
      required: ['phaseRelevance', 'sessionRelevance', 'terms', 'goal', 'refines'],
      properties: { terms: { type: 'array', items: { type: 'string' } }, refines: { type: 'boolean' } },
    });
  });

  it('keeps the scores of a combined answer whose terms are missing or malformed, and refuses bad scores', async () => {
    server.enqueue(
      'judge',
      { json: { phaseRelevance: 0.9, sessionRelevance: 0.9 } },
      { json: { phaseRelevance: 0.9, sessionRelevance: 0.9, terms: 'docx, word' } },
      { json: { phaseRelevance: 1.5, sessionRelevance: 0.9, terms: ['docx'] } },
    );
    expect(await models().understand(request, call)).toEqual({ phaseRelevance: 0.9, sessionRelevance: 0.9 });
    expect(await models().understand(request, call)).toEqual({ phaseRelevance: 0.9, sessionRelevance: 0.9 });
    const bad = await failure(models().understand(request, call));
    expect(bad.type).toBe(FAILURE.ModelInvalidOutput);
    expect(bad.nonRetryable).toBe(true);
  });

  it('makes optional fields required and nullable for strict mode, and reads null as absent', async () => {
    const orchestration = new OpenAIModels({
      baseURL: server.baseURL,
      apiKey: 'test',
      models: { orchestration: 'picker' },
      jsonMode: 'json_schema',
    });
    server.enqueue('picker', { json: { skills: ['markdown-to-docx'], toolsets: null, memories: null } });
    const empty = { skills: [], toolsets: [], memories: [] };
    const answer = await orchestration.orchestrate(
      {
        task: { sessionGoal: 'g', phaseGoal: 'p', message: 'm', resources: [] },
        mode: 'init',
        current: empty,
        candidates: empty,
      },
      call,
    );
    expect(answer).toEqual({ skills: ['markdown-to-docx'], toolsets: null, memories: null });
    const schema = (
      server.requests('picker').at(-1)!.body.response_format as { json_schema: { schema: Record<string, unknown> } }
    ).json_schema.schema;
    expect(schema).toMatchObject({
      additionalProperties: false,
      required: ['skills', 'toolsets', 'memories'],
      properties: { toolsets: { anyOf: [{ type: 'array' }, { type: 'null' }] } },
    });
  });

  it('caps every helper answer with max_tokens, per role, and the agent answer not at all', async () => {
    const all = new OpenAIModels({
      baseURL: server.baseURL,
      apiKey: 'test',
      models: { relevance: 'judge', compaction: 'summariser' },
      jsonMode: 'json_object',
      maxTokens: { compaction: 300 },
    });
    server.enqueue('judge', { json: { phaseRelevance: 1, sessionRelevance: 1 } });
    server.enqueue('summariser', { json: { summary: 'done' } });
    await all.relevance(request, call);
    await all.compact({ phaseGoal: 'p', inputs: ['x'] }, call);
    expect(server.requests('judge').at(-1)!.body.max_tokens).toBe(DEFAULT_MAX_TOKENS.relevance);
    expect(server.requests('summariser').at(-1)!.body.max_tokens).toBe(300);
  });

  it('reports an answer cut at max_tokens as invalid output, naming the limit', async () => {
    server.enqueue('judge', { content: '{"phaseRelevance": 0.5, "sessionRel', finishReason: 'length' });
    const error = await failure(models().relevance(request, call));
    expect(error.type).toBe(FAILURE.ModelInvalidOutput);
    expect(error.nonRetryable).toBe(true);
    expect(error.message).toContain(`max_tokens (${DEFAULT_MAX_TOKENS.relevance})`);
  });

  it.each([
    ['HTTP 429 with retry-after', faults.rateLimited(7), FAILURE.ModelRateLimited, false, 7_000],
    ['HTTP 500', faults.serverError(), FAILURE.ModelServerError, false, undefined],
    ['HTTP 400', faults.badRequest(), FAILURE.ModelRequestRejected, true, undefined],
    [
      'HTTP 400 refusing a parameter (OpenAI reasoning models: https://platform.openai.com/docs/guides/reasoning)',
      {
        status: 400,
        body: {
          error: {
            message:
              "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            type: 'invalid_request_error',
            param: 'max_tokens',
            code: 'unsupported_parameter',
          },
        },
      } as const,
      FAILURE.ModelConfigError,
      true,
      undefined,
    ],
    ['a hang-up', { hangUp: true } as const, FAILURE.ModelUnavailable, false, undefined],
    ['a reply slower than the timeout', faults.slow(3_000, { json: {} }), FAILURE.ModelTimeout, false, undefined],
    ['malformed JSON', faults.malformed(), FAILURE.ModelInvalidOutput, true, undefined],
    ['the wrong shape', faults.wrongShape(), FAILURE.ModelInvalidOutput, true, undefined],
  ])('maps %s to its failure type', async (_label, reply, type, nonRetryable, delay) => {
    server.enqueue('judge', reply);
    const error = await failure(models().relevance(request, call));
    expect(error.type).toBe(type);
    expect(Boolean(error.nonRetryable)).toBe(nonRetryable);
    expect(error.nextRetryDelay).toBe(delay);
  });

  it('reports a role without a model as not configured, and skips the agent turn instead of inventing a reply', async () => {
    const error = await failure(
      models('json_object', { relevance: 'judge' }).compact({ phaseGoal: 'x', inputs: [] }, call),
    );
    expect(error.type).toBe(FAILURE.ModelNotConfigured);
    expect(error.message).toContain('HARNESS_COMPACTION_MODEL');
    const agent = await models().agentStep(
      {
        sessionId: 's',
        goals: { session: 'g', phase: 'g' },
        decision: 'continue',
        summaries: [],
        transcript: [{ kind: 'user', seq: 1, text: 'hi', resources: [] }],
        skills: [],
        memories: [],
        tools: [],
        step: 1,
      },
      call,
    );
    expect(agent).toEqual({ kind: 'skipped', reason: expect.stringContaining('no agent model configured') });
  });

  it('streams the agent step: text pieces as they arrive, usage from the last chunk, calls accumulated', async () => {
    server.on('streaming-agent', {
      content: 'I will add them.',
      toolCalls: [{ id: 'call_7', name: 'add', arguments: { a: 2, b: 3 } }],
      usage: { prompt: 40, completion: 9 },
    });
    server.streamWith({ chunkChars: 4, delayMs: 30 });
    const pieces: Array<{ text: string; at: number }> = [];
    let usage: unknown;
    const started = Date.now();
    const answer = await models('json_object', { agent: 'streaming-agent' }).agentStep(agentPrompt, {
      timeoutMs: 5_000,
      onText: (text) => pieces.push({ text, at: Date.now() - started }),
      onUsage: (u) => (usage = u),
    });
    const finishedAt = Date.now() - started;
    server.streamWith({ chunkChars: 8, delayMs: 0 });
    expect(server.requests('streaming-agent')[0]?.body).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(pieces.map((p) => p.text)).toEqual(['I wi', 'll a', 'dd t', 'hem.']);
    // The first piece came while the answer was still streaming (tool-call chunks followed it).
    expect(pieces[0]!.at).toBeLessThan(finishedAt - 60);
    expect(answer).toEqual({
      kind: 'calls',
      text: 'I will add them.',
      calls: [{ callId: 'call_7', name: 'add', arguments: '{"a":2,"b":3}' }],
    });
    expect(usage).toMatchObject({ model: 'streaming-agent', promptTokens: 40, completionTokens: 9 });
  });

  it('cuts a stream that stalls after its headers at the call timeout, as a retryable timeout', async () => {
    server.on('stalling-agent', { content: 'x'.repeat(40) });
    server.streamWith({ chunkChars: 1, delayMs: 100 });
    const error = await failure(
      models('json_object', { agent: 'stalling-agent' }).agentStep(agentPrompt, { timeoutMs: 500 }),
    );
    server.streamWith({ chunkChars: 8, delayMs: 0 });
    expect(error.type).toBe(FAILURE.ModelTimeout);
    expect(error.nonRetryable).toBe(false);
  });

  /** Models whose agent profile wants reasoning back, so the step keeps what was streamed. */
  const reasoningBack = (agent: string) =>
    new OpenAIModels({
      baseURL: server.baseURL,
      apiKey: 'test',
      models: { agent },
      profiles: resolveProfiles({ baseURL: server.baseURL, models: { agent }, overrides: { reasoningBack: true } }),
    });

  it('reads a plain JSON answer to a stream request as the completion it is', async () => {
    server.on('json-only-agent', {
      content: 'Adding.',
      reasoning: 'two numbers',
      toolCalls: [{ name: 'add', arguments: { a: 2, b: 3 } }],
    });
    server.streamWith({ plainJson: true });
    const pieces: string[] = [];
    const answer = await reasoningBack('json-only-agent')
      .agentStep(agentPrompt, { timeoutMs: 5_000, onText: (t) => pieces.push(t) })
      .finally(() => server.streamWith({ plainJson: false }));
    expect(server.requests('json-only-agent')[0]?.body['stream']).toBe(true);
    expect(pieces).toEqual(['Adding.']);
    expect(answer).toMatchObject({ kind: 'calls', text: 'Adding.', reasoning: 'two numbers' });
    expect(answer.kind === 'calls' && answer.calls[0]?.name).toBe('add');
  });

  it('assembles calls streamed whole without index (older Ollama) and keeps the reasoning', async () => {
    server.on('ollama-agent', {
      reasoning: 'I should add, then double.',
      toolCalls: [
        { id: 'call_a', name: 'add', arguments: { a: 2, b: 3 } },
        { id: 'call_b', name: 'double', arguments: { n: 5 } },
      ],
    });
    server.streamWith({ toolCalls: 'whole-without-index' });
    const answer = await reasoningBack('ollama-agent')
      .agentStep(agentPrompt, { timeoutMs: 5_000 })
      .finally(() => server.streamWith({ toolCalls: 'indexed' }));
    expect(answer).toEqual({
      kind: 'calls',
      text: null,
      reasoning: 'I should add, then double.',
      calls: [
        { callId: 'call_a', name: 'add', arguments: '{"a":2,"b":3}' },
        { callId: 'call_b', name: 'double', arguments: '{"n":5}' },
      ],
    });
  });

  it('sends a plain completion request when streaming is off', async () => {
    server.on('plain-agent', { content: 'Five.' });
    const settings = { baseURL: server.baseURL, models: { agent: 'plain-agent' }, overrides: { stream: false } };
    const plain = new OpenAIModels({
      baseURL: server.baseURL,
      apiKey: 'test',
      models: { agent: 'plain-agent' },
      profiles: resolveProfiles(settings),
    });
    expect(await plain.agentStep(agentPrompt, { timeoutMs: 5_000 })).toEqual({ kind: 'reply', text: 'Five.' });
    expect(server.requests('plain-agent')[0]?.body['stream']).toBeUndefined();
  });
});

const agentPrompt = {
  sessionId: 's',
  goals: { session: 'g', phase: 'g' },
  decision: 'continue' as const,
  summaries: [],
  transcript: [{ kind: 'user' as const, seq: 1, text: 'add 2 and 3', resources: [] }],
  skills: [],
  memories: [],
  tools: [],
  step: 1,
};

describe('parseModelJson', () => {
  it('accepts JSON inside a Markdown code fence', () => {
    expect(
      parseModelJson('```json\n{"phaseRelevance": 0.2, "sessionRelevance": 0.8}\n```', RelevanceScores, 'relevance'),
    ).toEqual({
      phaseRelevance: 0.2,
      sessionRelevance: 0.8,
    });
  });

  it('names the offending field of an invalid answer', () => {
    expect(() =>
      parseModelJson('{"phaseRelevance": 2, "sessionRelevance": 0.5}', RelevanceScores, 'relevance'),
    ).toThrow(/relevance model returned invalid output: phaseRelevance/);
    expect(() => parseModelJson('', RelevanceScores, 'relevance')).toThrow(/empty answer/);
    // An orchestration answer naming no kind is malformed, not "keep everything".
    expect(() => parseModelJson('{"unexpected": true}', OrchestrationOutput, 'orchestration')).toThrow(
      /at least one of skills, toolsets, memories/,
    );
    expect(parseModelJson('{"toolsets": ["web-search"]}', OrchestrationOutput, 'orchestration')).toEqual({
      toolsets: ['web-search'],
    });
  });
});

describe('retryAfterMs', () => {
  it('reads seconds, HTTP dates and retry-after-ms, capped at 30 seconds', () => {
    expect(retryAfterMs(new Headers({ 'retry-after': '3' }))).toBe(3_000);
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '250' }))).toBe(250);
    expect(
      retryAfterMs(
        new Headers({ 'retry-after': 'Wed, 21 Oct 2015 07:28:10 GMT' }),
        Date.parse('Wed, 21 Oct 2015 07:28:00 GMT'),
      ),
    ).toBe(10_000);
    expect(retryAfterMs(new Headers({ 'retry-after': '99999' }))).toBe(30_000);
    expect(retryAfterMs(new Headers({}))).toBeUndefined();
  });
});
