/**
 * Chat-completions request bodies shaped by a provider profile (models/provider-profiles.ts): the
 * token-limit parameter, temperature only where allowed, `reasoning_effort`, the JSON mode, tool
 * descriptions clipped to the profile's limit, adjacent same-role messages merged where roles must
 * alternate, `tool_choice` only where accepted, stream options only where supported. Pure: no I/O,
 * so every shape is unit-tested (test/unit/request-shaping.test.ts).
 */
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import { z } from 'zod';
import type { ChatPrompt } from './prompts.js';
import type { ProviderProfile, ReasoningEffort } from './provider-profiles.js';
import { strictJsonSchema } from './strict-json-schema.js';

/** The temperature of helper calls (their answers are judgements, asked for the same way each time). */
export const HELPER_TEMPERATURE = 0;
/** The temperature of the agent's steps. */
export const AGENT_TEMPERATURE = 0.3;

/** Marks a tool description the harness shortened to fit the profile's limit. */
export const CLIP_MARK = ' …[description clipped]';

/** An assistant message as some providers take it back: with the reasoning it came with. */
export type AssistantWithReasoning = ChatCompletionAssistantMessageParam & { reasoning_content?: string };

/** The profile's sampling, token-limit and reasoning parameters for one call. */
function commonParams(
  profile: ProviderProfile,
  temperature: number,
  maxTokens: number | undefined,
  reasoningEffort: ReasoningEffort | undefined,
): Record<string, unknown> {
  return {
    ...(profile.temperature ? { temperature } : {}),
    ...(maxTokens !== undefined ? { [profile.tokenLimit]: maxTokens } : {}),
    ...(profile.reasoningEffort && reasoningEffort !== undefined ? { reasoning_effort: reasoningEffort } : {}),
  };
}

/** The `response_format` of a helper call in the profile's JSON mode (none in `prompt` mode). */
export function responseFormat(
  profile: Pick<ProviderProfile, 'jsonMode'>,
  asked: { name: string; schema: z.ZodType },
): ChatCompletionCreateParamsNonStreaming['response_format'] | undefined {
  switch (profile.jsonMode) {
    case 'json_schema':
      return {
        type: 'json_schema',
        json_schema: {
          name: asked.name,
          strict: true,
          schema: strictJsonSchema(z.toJSONSchema(asked.schema, { io: 'input' })),
        },
      };
    case 'json_object':
      return { type: 'json_object' };
    case 'prompt':
      return undefined;
  }
}

/** One helper call's body: system and user message, JSON mode, limits and sampling by the profile. */
export function helperRequest(
  profile: ProviderProfile,
  options: {
    model: string;
    prompt: ChatPrompt;
    asked: { name: string; schema: z.ZodType };
    maxTokens: number;
    reasoningEffort?: ReasoningEffort | undefined;
  },
): ChatCompletionCreateParamsNonStreaming {
  const format = responseFormat(profile, options.asked);
  return {
    model: options.model,
    messages: [
      { role: 'system', content: options.prompt.system },
      { role: 'user', content: options.prompt.user },
    ],
    ...(format ? { response_format: format } : {}),
    ...commonParams(profile, HELPER_TEMPERATURE, options.maxTokens, options.reasoningEffort),
  };
}

/**
 * A tool description no longer than `max` characters: what the model is told about approval is
 * kept at the end, and the description before it is cut and marked. `suffix` counts in the limit,
 * since the provider measures the final text.
 */
export function clipDescription(description: string, suffix: string, max: number | null): string {
  const whole = `${description}${suffix}`.trim();
  if (max === null || whole.length <= max) return whole;
  const room = Math.max(0, max - suffix.length - CLIP_MARK.length);
  // Whole UTF-16 code points only: a surrogate pair cut in half is invalid JSON text for some servers.
  let cut = description.slice(0, room);
  if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return `${cut.trimEnd()}${CLIP_MARK}${suffix}`.slice(0, max);
}

/** Tools with every description clipped to the profile's limit. */
export function clipTools(tools: ChatCompletionFunctionTool[], max: number | null): ChatCompletionFunctionTool[] {
  if (max === null) return tools;
  return tools.map((tool) => {
    const description = tool.function.description ?? '';
    if (description.length <= max) return tool;
    return { ...tool, function: { ...tool.function, description: clipDescription(description, '', max) } };
  });
}

function textOf(content: ChatCompletionMessageParam['content']): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => ('text' in part ? part.text : '')).join('');
}

/**
 * Messages with adjacent user messages, and adjacent assistant messages, merged into one (texts
 * joined by a blank line; an assistant's tool calls and reasoning kept), for chat templates that
 * refuse two messages of one role in a row. System and tool messages are left as they are.
 */
export function mergeAdjacentRoles(messages: ChatCompletionMessageParam[]): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [];
  for (const message of messages) {
    const last = out.at(-1);
    if (last && last.role === message.role && (message.role === 'user' || message.role === 'assistant')) {
      if (message.role === 'user') {
        out[out.length - 1] = { role: 'user', content: joinTexts(textOf(last.content), textOf(message.content)) };
        continue;
      }
      const before = last as AssistantWithReasoning;
      const after = message as AssistantWithReasoning;
      const text = joinTexts(textOf(before.content ?? null), textOf(after.content ?? null));
      const calls = [...(before.tool_calls ?? []), ...(after.tool_calls ?? [])];
      const reasoning = joinTexts(before.reasoning_content ?? '', after.reasoning_content ?? '');
      const merged: AssistantWithReasoning = {
        role: 'assistant',
        content: text === '' ? null : text,
        ...(calls.length > 0 ? { tool_calls: calls } : {}),
        ...(before.reasoning_content !== undefined || after.reasoning_content !== undefined
          ? { reasoning_content: reasoning }
          : {}),
      };
      out[out.length - 1] = merged;
      continue;
    }
    out.push(message);
  }
  return out;
}

function joinTexts(a: string, b: string): string {
  return a === '' ? b : b === '' ? a : `${a}\n\n${b}`;
}

/**
 * Messages with `reasoning_content` only where the profile wants it back: on assistant messages
 * after the newest user message (the current tool loop) when `reasoningBack`, nowhere otherwise
 * (a provider that does not know the field may refuse it).
 */
export function reasoningForProfile(
  messages: ChatCompletionMessageParam[],
  profile: Pick<ProviderProfile, 'reasoningBack'>,
): ChatCompletionMessageParam[] {
  let lastUser = -1;
  messages.forEach((m, i) => {
    if (m.role === 'user') lastUser = i;
  });
  return messages.map((message, i) => {
    if (message.role !== 'assistant') return message;
    const { reasoning_content: reasoning, ...rest } = message as AssistantWithReasoning;
    if (reasoning === undefined) return message;
    const keep = profile.reasoningBack && i > lastUser && (rest.tool_calls?.length ?? 0) > 0;
    return keep ? message : rest;
  });
}

/** The agent step's body, streaming or not as the profile says. */
export function agentRequestBody(
  profile: ProviderProfile,
  options: {
    model: string;
    messages: ChatCompletionMessageParam[];
    tools: ChatCompletionFunctionTool[];
    reasoningEffort?: ReasoningEffort | undefined;
  },
): ChatCompletionCreateParamsStreaming | ChatCompletionCreateParamsNonStreaming {
  const tools = clipTools(options.tools, profile.toolDescriptionMax);
  let messages = reasoningForProfile(options.messages, profile);
  if (profile.alternateRoles) messages = mergeAdjacentRoles(messages);
  // Tools before messages, as providers put them in front of the prompt: the body then reads in
  // cache-prefix order (stable tools and system text first, the transcript last).
  const body = {
    model: options.model,
    ...(tools.length > 0 ? { tools } : {}),
    ...(tools.length > 0 && profile.toolChoice ? { tool_choice: 'auto' as const } : {}),
    messages,
    ...commonParams(profile, AGENT_TEMPERATURE, undefined, options.reasoningEffort),
  };
  if (!profile.stream) return body;
  return {
    ...body,
    stream: true,
    ...(profile.streamUsage ? { stream_options: { include_usage: true } } : {}),
  };
}
