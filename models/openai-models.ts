/**
 * RoleModels over any OpenAI-compatible `/chat/completions` endpoint (OpenAI, DeepSeek, vLLM,
 * Ollama, ...). Temporal owns retries, so the client never retries on its own.
 */
import { FAILURE } from '../contract/failures.js';
import OpenAI from 'openai';
import { z } from 'zod';
import { parseModelJson, readableErrorBodies, toModelFailure } from './model-errors.js';
import { resolveProfiles, type JsonMode, type ResolvedProfile } from './provider-profiles.js';
import { agentRequestBody, helperRequest } from './request-shaping.js';
import {
  compactionPrompt,
  compactionResult,
  extractionPrompt,
  orchestrationPrompt,
  relevancePrompt,
  understandingPrompt,
  type ChatPrompt,
} from './prompts.js';
import { CompactionAnswer, ExtractionOutput, OrchestrationOutput } from '../contract/activity-contract.js';
import { RelevanceResult, RelevanceScores, UnderstandingAnswer } from '../contract/relevance.js';
import {
  ROLES,
  type AgentModelStep,
  type AgentStepPrompt,
  type AgentToolSpec,
  type CallOptions,
  type CallUsage,
  type Role,
  type RoleModels,
} from './roles.js';
import { ApplicationFailure } from '@temporalio/common';
import { agentRequest, agentTools } from './agent-request.js';
import { StreamAssembly } from './stream-assembly.js';
import { Stream } from 'openai/streaming';

const NO_AGENT_MODEL = 'no agent model configured (set HARNESS_AGENT_MODEL or HARNESS_MODEL)';

/** The one tool the agent's check request offers, so the endpoint sees a tools request like every real step. */
const CHECK_TOOL_SPECS: AgentToolSpec[] = [
  {
    functionName: 'harness_check',
    tool: 'harness_check',
    toolset: null,
    description: 'Does nothing; offered so the endpoint sees a request with a tool. Do not call it.',
    inputSchema: { type: 'object', properties: { note: { type: 'string' } } },
    execution: 'builtin',
    requiresApproval: false,
  },
];
const CHECK_TOOLS = agentTools(CHECK_TOOL_SPECS);

/**
 * The agent's answer as a step: tool calls when it made any (its text kept alongside), else its text.
 * An answer with neither, or a call that is not a function call, is invalid output (non-retryable).
 */
export function agentAnswer(message: OpenAI.ChatCompletionMessage | undefined, reasoning?: string): AgentModelStep {
  const invalid = (why: string) =>
    ApplicationFailure.nonRetryable(`agent model returned invalid output: ${why}`, FAILURE.ModelInvalidOutput);
  const text = message?.content?.trim() ? message.content : null;
  const toolCalls = message?.tool_calls ?? [];
  if (toolCalls.length === 0) {
    if (text === null) throw invalid('neither text nor tool calls');
    return { kind: 'reply', text };
  }
  const seen = new Set<string>();
  const calls = toolCalls.map((toolCall, i) => {
    if (toolCall.type !== 'function')
      throw invalid(`tool call ${i + 1} is a ${toolCall.type} call, not a function call`);
    if (!toolCall.function.name) throw invalid(`tool call ${i + 1} names no function`);
    // Some servers (older Ollama) send no call ids, or repeat them; each call needs its own, and the
    // same one when a retried step gets the same answer (StreamAssembly names id-less streamed calls).
    let callId = toolCall.id || `call_${i + 1}`;
    if (seen.has(callId)) callId = `${callId}_${i + 1}`;
    seen.add(callId);
    return { callId, name: toolCall.function.name, arguments: toolCall.function.arguments ?? '' };
  });
  const thought = reasoning ?? reasoningOf(message);
  return { kind: 'calls', text, calls, ...(thought ? { reasoning: thought } : {}) };
}

/**
 * The `reasoning_content` a provider put beside an answer (DeepSeek, vLLM and Ollama reasoning
 * models), or undefined. Not part of OpenAI's own types, so read defensively.
 */
export function reasoningOf(message: object | undefined | null): string | undefined {
  const value = (message as { reasoning_content?: unknown } | undefined | null)?.reasoning_content;
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * What a completion used, from its `usage` block. A server that sends none (some local servers)
 * reports zero tokens under the model it answered for, so the call still counts with its latency.
 */
export function usageOf(completion: Pick<OpenAI.ChatCompletion, 'usage' | 'model'>, requested: string): CallUsage {
  const usage = completion.usage;
  const count = (n: number | null | undefined) =>
    typeof n === 'number' && Number.isFinite(n) && n > 0 ? Math.round(n) : 0;
  return {
    // The name the request used, which the price table is keyed by; servers often answer with a dated variant.
    model: requested,
    promptTokens: count(usage?.prompt_tokens),
    completionTokens: count(usage?.completion_tokens),
    cachedTokens: count(usage?.prompt_tokens_details?.cached_tokens),
    reasoningTokens: count(usage?.completion_tokens_details?.reasoning_tokens),
  };
}

function reportUsage(completion: OpenAI.ChatCompletion, model: string, call: CallOptions): void {
  call.onUsage?.(usageOf(completion, model));
}

/** The roles whose answer is a small JSON object: the helpers of the task-control loop. */
export type HelperRole = Exclude<Role, 'agent'>;

/**
 * Most tokens a helper model may answer with (`max_tokens` or `max_completion_tokens`, as the
 * provider profile says), by role; a reasoning profile adds its `reasoningTokens`. Each answer is a small JSON
 * object, so these leave room for a reasoning model's thinking while stopping a model that
 * rambles or repeats itself from running to the context limit (and into parseModelJson).
 */
export const DEFAULT_MAX_TOKENS: Record<HelperRole, number> = {
  relevance: 512,
  extraction: 512,
  orchestration: 1_024,
  compaction: 1_024,
};

export interface OpenAIModelsConfig {
  baseURL?: string;
  apiKey?: string;
  /** Model name per role; a role without one is "not configured". */
  models: Partial<Record<Role, string>>;
  /**
   * The JSON mode of every role, whatever its profile says (`HARNESS_JSON_MODE`); used only when
   * `profiles` is not given.
   */
  jsonMode?: JsonMode | undefined;
  /** The answer limit per helper role; a role left out gets DEFAULT_MAX_TOKENS (plus the profile's reasoning allowance). */
  maxTokens?: Partial<Record<HelperRole, number>>;
  /** Each role's provider profile (worker/config.ts resolves them); default: detected from baseURL and model. */
  profiles?: Record<Role, ResolvedProfile>;
}

export class OpenAIModels implements RoleModels {
  private readonly client: OpenAI;
  /** Each role's provider profile. */
  readonly profiles: Record<Role, ResolvedProfile>;

  constructor(private readonly config: OpenAIModelsConfig) {
    this.profiles =
      config.profiles ?? resolveProfiles({ baseURL: config.baseURL, models: config.models, jsonMode: config.jsonMode });
    this.client = new OpenAI({
      baseURL: config.baseURL,
      // Local OpenAI-compatible servers (Ollama, vLLM) accept any key; the client insists on one.
      apiKey: config.apiKey ?? 'not-needed',
      maxRetries: 0,
      fetch: readableErrorBodies(),
    });
  }

  describe(): Record<Role, string> {
    const out = {} as Record<Role, string>;
    for (const role of ROLES)
      out[role] = this.config.models[role] ? `openai/${this.config.models[role]}` : 'not configured';
    return out;
  }

  relevance(request: Parameters<RoleModels['relevance']>[0], call: CallOptions) {
    return this.json('relevance', relevancePrompt(request), RelevanceScores, call);
  }

  /**
   * Relevance and the message's task terms in one call, with the relevance role's model and limits.
   * The model is asked for both; terms it gets wrong are dropped, never the scores.
   */
  understand(request: Parameters<RoleModels['relevance']>[0], call: CallOptions) {
    return this.json('relevance', understandingPrompt(request), RelevanceResult, call, {
      name: 'understanding_output',
      schema: UnderstandingAnswer,
    });
  }

  extract(request: Parameters<RoleModels['extract']>[0], call: CallOptions) {
    return this.json('extraction', extractionPrompt(request), ExtractionOutput, call);
  }

  orchestrate(request: Parameters<RoleModels['orchestrate']>[0], call: CallOptions) {
    return this.json('orchestration', orchestrationPrompt(request), OrchestrationOutput, call);
  }

  async compact(request: Parameters<RoleModels['compact']>[0], call: CallOptions) {
    return compactionResult(request, await this.json('compaction', compactionPrompt(request), CompactionAnswer, call));
  }

  /** The base URL requests go to. */
  endpoint(): string {
    return this.client.baseURL;
  }

  /**
   * The parameters a role's requests carry besides model, messages and tools, as `name=value` words
   * (what `harness doctor` shows as "sent"): the request is built by the same shaping functions.
   */
  requestShape(role: Role): string {
    const model = this.config.models[role] ?? '';
    const { profile, reasoningEffort } = this.profiles[role];
    const body: Record<string, unknown> =
      role === 'agent'
        ? { ...agentRequestBody(profile, { model, messages: [], tools: CHECK_TOOLS, reasoningEffort }) }
        : {
            ...helperRequest(profile, {
              model,
              prompt: { system: '', user: '' },
              asked: { name: `${role}_output`, schema: z.object({}) },
              maxTokens: this.config.maxTokens?.[role] ?? DEFAULT_MAX_TOKENS[role] + profile.reasoningTokens,
              reasoningEffort,
            }),
          };
    const words: string[] = [];
    for (const [key, value] of Object.entries(body)) {
      if (key === 'model' || key === 'messages') continue;
      if (key === 'tools') words.push(`tools=${(value as unknown[]).length}`);
      else if (key === 'response_format') words.push(`response_format=${(value as { type: string }).type}`);
      else if (key === 'stream_options') words.push('include_usage');
      else words.push(`${key}=${String(value)}`);
    }
    return words.join(' ');
  }

  /**
   * One small request of the role's exact shape (the same prompt, JSON mode, limits and, for the
   * agent, a tool and the stream), for the start-up check and `harness doctor`. Resolves with the
   * time to the first text (the whole answer's time when nothing streamed); throws what a real call
   * would throw.
   */
  async probe(role: Role, call: CallOptions): Promise<{ firstTokenMs: number }> {
    const started = performance.now();
    let first: number | undefined;
    const timed: CallOptions = {
      ...call,
      onText: () => {
        first ??= performance.now() - started;
      },
    };
    const task = {
      sessionGoal: 'Check the model endpoint',
      phaseGoal: 'Check the model endpoint',
      message: 'ok',
      resources: [],
    };
    switch (role) {
      case 'relevance':
        await this.understand(
          { sessionGoal: task.sessionGoal, phaseGoal: task.phaseGoal, message: { text: 'ok', resources: [] } },
          timed,
        );
        break;
      case 'extraction':
        await this.extract({ task }, timed);
        break;
      case 'orchestration': {
        const none = { skills: [], toolsets: [], memories: [] };
        await this.orchestrate({ task, mode: 'init', current: none, candidates: none }, timed);
        break;
      }
      case 'compaction':
        await this.compact({ phaseGoal: task.phaseGoal, inputs: ['ok'] }, timed);
        break;
      case 'agent': {
        const step = await this.agentStep(
          {
            sessionId: 'harness-check',
            goals: { session: task.sessionGoal, phase: task.phaseGoal },
            decision: 'initialize',
            summaries: [],
            transcript: [
              { kind: 'user', seq: 1, text: 'Reply with the word ok. Do not call the tool.', resources: [] },
            ],
            skills: [],
            memories: [],
            tools: CHECK_TOOL_SPECS,
            step: 1,
          },
          timed,
        );
        if (step.kind === 'skipped') throw ApplicationFailure.nonRetryable(step.reason, FAILURE.ModelNotConfigured);
        break;
      }
    }
    return { firstTokenMs: Math.round(first ?? performance.now() - started) };
  }

  /**
   * One step with real tool calling: the loaded tools go out as `tools`, the answer is text or
   * `tool_calls`. The answer streams where the profile says so (`stream`), so `call.onText` hears the
   * text as it arrives; `include_usage` keeps the usage block, which a stream otherwise leaves out. The
   * chunks are assembled by StreamAssembly (calls without index or id, two calls at one index,
   * reasoning deltas), and a server that answers the stream request with plain JSON is read as the
   * completion it is.
   */
  async agentStep(prompt: AgentStepPrompt, call: CallOptions): Promise<AgentModelStep> {
    const model = this.config.models.agent;
    if (!model) return { kind: 'skipped', reason: NO_AGENT_MODEL };
    const { profile, reasoningEffort } = this.profiles.agent;
    const { messages, tools } = agentRequest(prompt, { toolDescriptionMax: profile.toolDescriptionMax });
    const body = agentRequestBody(profile, { model, messages, tools, reasoningEffort });
    // The client's `timeout` stops at the response headers; a stream that stalls after them is cut
    // by this deadline instead, and reported as a timeout (retryable) like a slow plain answer.
    const deadline = AbortSignal.timeout(call.timeoutMs);
    const signal = call.signal ? AbortSignal.any([call.signal, deadline]) : deadline;
    const assembly = new StreamAssembly(String(prompt.step));
    try {
      const options = { timeout: call.timeoutMs, signal };
      if (body.stream) {
        const response = await this.client.chat.completions.create(body, options).asResponse();
        await readAgentResponse(response, assembly, call.onText);
        // The client's stream ends quietly when its signal aborts; an unfinished answer is no answer.
        if (signal.aborted) throw new OpenAI.APIUserAbortError();
      } else {
        const piece = assembly.pushCompletion(await this.client.chat.completions.create(body, options));
        if (call.onText && piece.text) call.onText(piece.text);
      }
    } catch (err) {
      if (deadline.aborted && !call.signal?.aborted) {
        throw ApplicationFailure.retryable(`agent model timed out (stream unfinished)`, FAILURE.ModelTimeout);
      }
      throw toModelFailure(err, 'agent');
    }
    const done = assembly.result();
    if (done.chunks === 0) {
      throw ApplicationFailure.retryable('agent model failed: the answer ended without any chunks', FAILURE.ModelError);
    }
    call.onUsage?.(
      usageOf(
        { model: done.model ?? model, ...(done.usage ? { usage: done.usage as OpenAI.CompletionUsage } : {}) },
        model,
      ),
    );
    const step = agentAnswer(
      {
        role: 'assistant',
        content: done.content,
        refusal: null,
        ...(done.toolCalls.length > 0
          ? {
              tool_calls: done.toolCalls.map((c) => ({
                id: c.id,
                type: 'function' as const,
                function: { name: c.name, arguments: c.arguments },
              })),
            }
          : {}),
      },
      done.reasoning ?? undefined,
    );
    // Reasoning goes into workflow history only where the provider wants it back: it can be long,
    // and elsewhere it would be sent nowhere (its tokens are counted in usage either way).
    if (step.kind === 'calls' && !profile.reasoningBack) delete step.reasoning;
    return step;
  }

  /**
   * One helper call answered in JSON and parsed by `schema`. `asked` names the JSON Schema the model
   * is given in `json_schema` mode when it should differ from the parser (default: `schema` itself,
   * named `<role>_output`).
   */
  private async json<T>(
    role: HelperRole,
    prompt: ChatPrompt,
    schema: z.ZodType<T>,
    call: CallOptions,
    asked: { name: string; schema: z.ZodType } = { name: `${role}_output`, schema },
  ): Promise<T> {
    const model = this.config.models[role];
    if (!model) {
      throw ApplicationFailure.nonRetryable(
        `no model configured for the ${role} role (set HARNESS_${role.toUpperCase()}_MODEL or HARNESS_MODEL)`,
        FAILURE.ModelNotConfigured,
      );
    }
    const { profile, reasoningEffort } = this.profiles[role];
    const maxTokens = this.config.maxTokens?.[role] ?? DEFAULT_MAX_TOKENS[role] + profile.reasoningTokens;
    const body = helperRequest(profile, { model, prompt, asked, maxTokens, reasoningEffort });
    const { content, finishReason } = await this.complete(role, model, body, call);
    if (finishReason === 'length') {
      throw ApplicationFailure.nonRetryable(
        `${role} model returned invalid output: the answer was cut at ${profile.tokenLimit} (${maxTokens})`,
        FAILURE.ModelInvalidOutput,
      );
    }
    return parseModelJson(content, schema, role);
  }

  private async complete(
    role: Role,
    model: string,
    body: OpenAI.ChatCompletionCreateParamsNonStreaming,
    call: CallOptions,
  ): Promise<{ content: string | null | undefined; finishReason: string | undefined }> {
    try {
      const completion = await this.client.chat.completions.create(body, {
        timeout: call.timeoutMs,
        ...(call.signal ? { signal: call.signal } : {}),
      });
      reportUsage(completion, model, call);
      const choice = completion.choices[0];
      return { content: choice?.message?.content, finishReason: choice?.finish_reason };
    } catch (err) {
      throw toModelFailure(err, role);
    }
  }
}

/**
 * Reads the answer to a stream request into `assembly`: Server-Sent Events of chunks, or, from a
 * server that ignores `stream` and answers with JSON (Content-Type application/json), the one
 * completion. The text is forwarded to `onText` as it arrives.
 */
async function readAgentResponse(
  response: Response,
  assembly: StreamAssembly,
  onText: ((piece: string) => void) | undefined,
): Promise<void> {
  const type = response.headers.get('content-type') ?? '';
  if (/application\/json/i.test(type)) {
    const piece = assembly.pushCompletion(await response.json());
    if (piece.text && onText) onText(piece.text);
    return;
  }
  const controller = new AbortController();
  for await (const chunk of Stream.fromSSEResponse<OpenAI.ChatCompletionChunk>(response, controller)) {
    const piece = assembly.push(chunk);
    if (piece.text && onText) onText(piece.text);
  }
}
