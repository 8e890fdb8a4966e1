/**
 * RoleModels over any OpenAI-compatible `/chat/completions` endpoint (OpenAI, DeepSeek, vLLM,
 * Ollama, ...). Temporal owns retries, so the client never retries on its own.
 */
import OpenAI from 'openai';
import { z } from 'zod';
import { FailureType, parseModelJson, toModelFailure } from './model-errors.js';
import { strictJsonSchema } from './strict-json-schema.js';
import {
  agentPrompt,
  compactionPrompt,
  extractionPrompt,
  orchestrationPrompt,
  relevancePrompt,
  type ChatPrompt,
} from './prompts.js';
import {
  CompactionOutput,
  ExtractionOutput,
  OrchestrationOutput,
  ROLES,
  RelevanceOutput,
  type CallOptions,
  type Role,
  type RoleModels,
} from './roles.js';
import { ApplicationFailure } from '@temporalio/common';

export interface OpenAIModelsConfig {
  baseURL?: string;
  apiKey?: string;
  /** Model name per role; a role without one is "not configured". */
  models: Partial<Record<Role, string>>;
  /** `json_object` works with OpenAI, DeepSeek, vLLM and Ollama; `json_schema` asks for strict schemas. */
  jsonMode: 'json_object' | 'json_schema';
}

export class OpenAIModels implements RoleModels {
  private readonly client: OpenAI;

  constructor(private readonly config: OpenAIModelsConfig) {
    this.client = new OpenAI({
      baseURL: config.baseURL,
      // Local OpenAI-compatible servers (Ollama, vLLM) accept any key; the client insists on one.
      apiKey: config.apiKey ?? 'not-needed',
      maxRetries: 0,
    });
  }

  describe(): Record<Role, string> {
    const out = {} as Record<Role, string>;
    for (const role of ROLES)
      out[role] = this.config.models[role] ? `openai/${this.config.models[role]}` : 'not configured';
    return out;
  }

  relevance(request: Parameters<RoleModels['relevance']>[0], call: CallOptions) {
    return this.json('relevance', relevancePrompt(request), RelevanceOutput, call);
  }

  extract(request: Parameters<RoleModels['extract']>[0], call: CallOptions) {
    return this.json('extraction', extractionPrompt(request), ExtractionOutput, call);
  }

  orchestrate(request: Parameters<RoleModels['orchestrate']>[0], call: CallOptions) {
    return this.json('orchestration', orchestrationPrompt(request), OrchestrationOutput, call);
  }

  compact(request: Parameters<RoleModels['compact']>[0], call: CallOptions) {
    return this.json('compaction', compactionPrompt(request), CompactionOutput, call);
  }

  async agent(prompt: Parameters<RoleModels['agent']>[0], call: CallOptions) {
    const model = this.config.models.agent;
    if (!model) return { skipped: 'no agent model configured (set HARNESS_AGENT_MODEL or HARNESS_MODEL)' };
    const content = await this.complete('agent', model, agentPrompt(prompt), undefined, call);
    if (!content?.trim()) {
      throw ApplicationFailure.nonRetryable('agent model returned an empty reply', FailureType.InvalidOutput);
    }
    return { reply: content };
  }

  private async json<T>(role: Role, prompt: ChatPrompt, schema: z.ZodType<T>, call: CallOptions): Promise<T> {
    const model = this.config.models[role];
    if (!model) {
      throw ApplicationFailure.nonRetryable(
        `no model configured for the ${role} role (set HARNESS_${role.toUpperCase()}_MODEL or HARNESS_MODEL)`,
        FailureType.NotConfigured,
      );
    }
    const format =
      this.config.jsonMode === 'json_schema'
        ? {
            type: 'json_schema' as const,
            json_schema: {
              name: `${role}_output`,
              strict: true,
              schema: strictJsonSchema(z.toJSONSchema(schema, { io: 'input' })),
            },
          }
        : { type: 'json_object' as const };
    const content = await this.complete(role, model, prompt, format, call);
    return parseModelJson(content, schema, role);
  }

  private async complete(
    role: Role,
    model: string,
    prompt: ChatPrompt,
    responseFormat: OpenAI.ChatCompletionCreateParams['response_format'] | undefined,
    call: CallOptions,
  ): Promise<string | null | undefined> {
    try {
      const completion = await this.client.chat.completions.create(
        {
          model,
          messages: [
            { role: 'system', content: prompt.system },
            { role: 'user', content: prompt.user },
          ],
          ...(responseFormat ? { response_format: responseFormat } : {}),
          temperature: role === 'agent' ? 0.3 : 0,
        },
        { timeout: call.timeoutMs, ...(call.signal ? { signal: call.signal } : {}) },
      );
      return completion.choices[0]?.message?.content;
    } catch (err) {
      throw toModelFailure(err, role);
    }
  }
}
