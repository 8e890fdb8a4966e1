import { describe, expect, it } from 'vitest';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { RelevanceScores } from '../../contract/relevance.js';
import { agentRequest, agentTools } from '../../models/agent-request.js';
import {
  COMPACTION_SYSTEM,
  EXTRACTION_SYSTEM,
  HANDOFF_SYSTEM,
  ORCHESTRATION_SYSTEM,
  RELEVANCE_SYSTEM,
  UNDERSTANDING_SYSTEM,
} from '../../models/prompts.js';
import {
  detectProvider,
  parseOverrides,
  PROFILES,
  PROVIDER_NAMES,
  resolveProfile,
  type ProviderProfile,
} from '../../models/provider-profiles.js';
import {
  agentRequestBody,
  clipDescription,
  CLIP_MARK,
  helperRequest,
  mergeAdjacentRoles,
  reasoningForProfile,
} from '../../models/request-shaping.js';
import type { AgentStepPrompt, AgentToolSpec } from '../../models/roles.js';

const prompt = { system: RELEVANCE_SYSTEM, user: '{"message":"hi"}' };
const asked = { name: 'relevance_output', schema: RelevanceScores };

describe('provider detection', () => {
  it.each([
    [undefined, 'gpt-4o-mini', 'openai'],
    [undefined, 'gpt-5-mini', 'openai-reasoning'],
    ['https://api.openai.com/v1', 'o4-mini', 'openai-reasoning'],
    ['https://api.openai.com/v1', 'gpt-5-chat-latest', 'openai'],
    ['http://127.0.0.1:9999/v1', 'gpt-5-nano', 'openai-reasoning'],
    ['https://my-res.openai.azure.com/openai/v1/', 'prod-chat', 'azure-openai'],
    ['https://api.deepseek.com/v1', 'deepseek-chat', 'deepseek'],
    ['https://api.deepseek.com', 'deepseek-reasoner', 'deepseek-reasoner'],
    ['http://localhost:11434/v1', 'deepseek-r1:7b', 'ollama'],
    ['http://localhost:8000/v1', 'Qwen/Qwen2.5-7B-Instruct', 'vllm'],
    ['http://127.0.0.1:8799/v1', 'scripted', 'generic'],
  ])('%s with %s is %s', (baseURL, model, name) => {
    expect(detectProvider(baseURL, model).name).toBe(name);
  });

  it('takes the role variable over HARNESS_PROVIDER over detection, then applies overrides in order', () => {
    const settings = {
      baseURL: 'http://localhost:8000/v1',
      models: { agent: 'm', relevance: 'm' },
      provider: 'generic' as const,
      providerByRole: { agent: 'deepseek-reasoner' as const },
      overrides: { toolChoice: true },
      overridesByRole: { agent: { toolChoice: false, stream: false } },
      jsonMode: 'prompt' as const,
      reasoningEffort: 'low' as const,
      reasoningEffortByRole: { agent: 'high' as const },
    };
    const agent = resolveProfile('agent', settings);
    expect(agent).toMatchObject({
      name: 'deepseek-reasoner',
      source: 'HARNESS_AGENT_PROVIDER',
      reasoningEffort: 'high',
    });
    expect(agent.profile).toMatchObject({ toolChoice: false, stream: false, jsonMode: 'prompt' });
    const relevance = resolveProfile('relevance', settings);
    expect(relevance).toMatchObject({ name: 'generic', source: 'HARNESS_PROVIDER', reasoningEffort: 'low' });
    expect(relevance.profile.toolChoice).toBe(true);
    expect(relevance.overrides.map((o) => o.from)).toEqual(['HARNESS_PROVIDER_OVERRIDES', 'HARNESS_JSON_MODE']);
    // The named profile itself is never changed.
    expect(PROFILES.generic.toolChoice).toBe(false);
  });

  it('refuses overrides that are not profile fields, naming the variable', () => {
    expect(parseOverrides('HARNESS_PROVIDER_OVERRIDES', '{"temperature":false}')).toEqual({ temperature: false });
    expect(() => parseOverrides('HARNESS_PROVIDER_OVERRIDES', '{"temprature":false}')).toThrow(
      /HARNESS_PROVIDER_OVERRIDES: .*temprature/,
    );
    expect(() => parseOverrides('HARNESS_AGENT_PROVIDER_OVERRIDES', '{"jsonMode":"yaml"}')).toThrow(
      /HARNESS_AGENT_PROVIDER_OVERRIDES: jsonMode/,
    );
    expect(() => parseOverrides('X', 'not json')).toThrow(/X: not JSON/);
  });
});

describe('helper requests by profile', () => {
  it('uses max_completion_tokens and no temperature for OpenAI reasoning models, with reasoning_effort when set', () => {
    const body = helperRequest(PROFILES['openai-reasoning'], {
      model: 'gpt-5-mini',
      prompt,
      asked,
      maxTokens: 600,
      reasoningEffort: 'low',
    });
    expect(body).not.toHaveProperty('max_tokens');
    expect(body).not.toHaveProperty('temperature');
    expect(body).toMatchObject({ max_completion_tokens: 600, reasoning_effort: 'low' });
    expect(body.response_format).toMatchObject({ type: 'json_schema', json_schema: { strict: true } });
  });

  it('uses max_tokens, temperature 0 and json_object for DeepSeek chat, and never reasoning_effort where refused', () => {
    const body = helperRequest(PROFILES.deepseek, {
      model: 'deepseek-chat',
      prompt,
      asked,
      maxTokens: 512,
      reasoningEffort: 'low',
    });
    expect(body).toMatchObject({ max_tokens: 512, temperature: 0, response_format: { type: 'json_object' } });
    expect(body).not.toHaveProperty('reasoning_effort');
    expect(body).not.toHaveProperty('max_completion_tokens');
  });

  it('sends no response_format in prompt mode', () => {
    const profile: ProviderProfile = { ...PROFILES.generic, jsonMode: 'prompt' };
    expect(helperRequest(profile, { model: 'm', prompt, asked, maxTokens: 1 })).not.toHaveProperty('response_format');
  });

  // json_object needs the word "json" in the messages (OpenAI, DeepSeek) and, as DeepSeek's JSON mode
  // guide asks, the shape described; prompt-only mode relies on the same description.
  it.each([
    ['relevance', RELEVANCE_SYSTEM, ['phaseRelevance', 'sessionRelevance']],
    ['understanding', UNDERSTANDING_SYSTEM, ['phaseRelevance', 'terms']],
    ['extraction', EXTRACTION_SYSTEM, ['terms']],
    ['orchestration', ORCHESTRATION_SYSTEM, ['skills', 'toolsets', 'memories']],
    ['compaction', COMPACTION_SYSTEM, ['summary']],
    ['hand-off', HANDOFF_SYSTEM, ['produced', 'nextSteps']],
  ])('the %s prompt says JSON and describes its keys', (_name, system, keys) => {
    expect(system).toMatch(/json/i);
    for (const key of keys) expect(system).toContain(`"${key}"`);
  });
});

const spec = (name: string, description: string, requiresApproval = false): AgentToolSpec => ({
  functionName: name,
  tool: name,
  toolset: 'docs',
  description,
  inputSchema: { type: 'object', properties: {} },
  execution: 'mcp',
  requiresApproval,
});

describe('tool descriptions', () => {
  it('clips to the limit, marked, keeping the approval note inside the limit', () => {
    const long = 'x'.repeat(2000);
    const [tool] = agentTools([spec('convert', long, true)], 1024);
    const text = tool!.function.description!;
    expect(text.length).toBeLessThanOrEqual(1024);
    expect(text.endsWith(`${CLIP_MARK} (requires approval)`)).toBe(true);
    // A description at the limit before the note still ends inside it once the note is added.
    const edge = clipDescription('y'.repeat(1024), ' (requires approval)', 1024);
    expect(edge.length).toBeLessThanOrEqual(1024);
    expect(edge).toContain(CLIP_MARK);
  });

  it('leaves short descriptions and unlimited profiles alone', () => {
    expect(clipDescription('short', ' (requires approval)', 1024)).toBe('short (requires approval)');
    expect(clipDescription('z'.repeat(5000), '', null)).toHaveLength(5000);
  });

  it('never cuts a surrogate pair in half', () => {
    const text = clipDescription('😀'.repeat(600), '', 100);
    expect(text.length).toBeLessThanOrEqual(100);
    expect(() => encodeURIComponent(text)).not.toThrow();
  });
});

describe('message shaping', () => {
  const messages: ChatCompletionMessageParam[] = [
    { role: 'system', content: 'rules' },
    { role: 'user', content: 'memories' },
    { role: 'user', content: 'the task' },
    { role: 'assistant', content: 'first' },
    {
      role: 'assistant',
      content: 'second',
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
    },
    { role: 'tool', tool_call_id: 'c1', content: 'ok' },
    { role: 'user', content: '[Reply from sub-session]' },
    { role: 'user', content: 'next' },
  ];

  it('merges adjacent user and assistant messages, keeping tool calls and tool messages', () => {
    const merged = mergeAdjacentRoles(messages);
    expect(merged.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'user']);
    expect(merged[1]!.content).toBe('memories\n\nthe task');
    expect(merged[2]).toMatchObject({ content: 'first\n\nsecond', tool_calls: [{ id: 'c1' }] });
    expect(merged[4]!.content).toBe('[Reply from sub-session]\n\nnext');
  });

  it('keeps reasoning_content only on tool-call steps of the current loop, and only where the profile wants it', () => {
    const withReasoning = [
      { role: 'user', content: 'a' },
      {
        role: 'assistant',
        content: null,
        reasoning_content: 'old thought',
        tool_calls: [{ id: 'c0', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c0', content: 'ok' },
      { role: 'assistant', content: 'done', reasoning_content: 'old reply thought' },
      { role: 'user', content: 'b' },
      {
        role: 'assistant',
        content: null,
        reasoning_content: 'new thought',
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'ok' },
    ] as ChatCompletionMessageParam[];
    const back = reasoningForProfile(withReasoning, { reasoningBack: true });
    expect(
      back.filter((m) => 'reasoning_content' in m).map((m) => (m as { reasoning_content: string }).reasoning_content),
    ).toEqual(['new thought']);
    const none = reasoningForProfile(withReasoning, { reasoningBack: false });
    expect(none.some((m) => 'reasoning_content' in m)).toBe(false);
  });
});

describe('agent request bodies', () => {
  const stepPrompt: AgentStepPrompt = {
    sessionId: 's1',
    goals: { session: 'g', phase: 'g' },
    decision: 'continue',
    summaries: [],
    transcript: [
      { kind: 'user', seq: 1, text: 'convert it', resources: [] },
      {
        kind: 'step',
        seq: 1,
        text: null,
        reasoning: 'I should convert',
        calls: [{ callId: 'c1', tool: 'convert', arguments: '{}', status: 'ok', output: 'done' }],
      },
    ],
    skills: [],
    memories: [{ id: 'm1', text: 'likes docx' }],
    tools: [spec('convert', 'd'.repeat(1500), true)],
    step: 2,
  };

  it.each(PROVIDER_NAMES)('%s: shapes the body by its profile', (name) => {
    const profile = PROFILES[name];
    const { messages, tools } = agentRequest(stepPrompt, { toolDescriptionMax: profile.toolDescriptionMax });
    const body = agentRequestBody(profile, {
      model: 'm',
      messages,
      tools,
      reasoningEffort: 'low',
    }) as unknown as Record<string, unknown>;
    expect('temperature' in body).toBe(profile.temperature);
    expect('reasoning_effort' in body).toBe(profile.reasoningEffort);
    expect('tool_choice' in body).toBe(profile.toolChoice);
    expect(body.stream === true).toBe(profile.stream);
    expect('stream_options' in body).toBe(profile.stream && profile.streamUsage);
    expect('max_tokens' in body || 'max_completion_tokens' in body).toBe(false);
    const sent = body.tools as Array<{ function: { description: string } }>;
    if (profile.toolDescriptionMax !== null)
      expect(sent[0]!.function.description.length).toBeLessThanOrEqual(profile.toolDescriptionMax);
    const roles = (body.messages as ChatCompletionMessageParam[]).map((m) => m.role);
    // The memories message and the user's input are adjacent user messages.
    expect(roles.slice(0, 3)).toEqual(
      profile.alternateRoles ? ['system', 'user', 'assistant'] : ['system', 'user', 'user'],
    );
    const assistant = (body.messages as Array<Record<string, unknown>>).find((m) => m.role === 'assistant')!;
    expect(assistant.reasoning_content === 'I should convert').toBe(profile.reasoningBack);
  });
});
