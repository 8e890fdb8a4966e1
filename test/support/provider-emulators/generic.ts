/**
 * A conservative OpenAI-compatible server: it refuses what any of the servers docs/operations.md
 * names refuses, so a request it takes is one they all take.
 */
import {
  noMessageField,
  jsonWordInPrompt,
  openaiErrorBody,
  responseFormatType,
  startEmulator,
  streamOptionsOnlyWithStream,
  toolDescriptionAtMost,
  unsupportedParameter,
  type Emulator,
  type Rule,
} from './core.js';

/** `json_schema` is not taken by DeepSeek: https://api-docs.deepseek.com/api/create-chat-completion */
const noJsonSchema: Rule = (req) =>
  responseFormatType(req) === 'json_schema'
    ? { status: 400, message: 'This response_format type is unavailable now: json_schema', param: 'response_format' }
    : undefined;

export const GENERIC_RULES: Rule[] = [
  // OpenAI's limit: https://platform.openai.com/docs/api-reference/chat/create (tools[].function)
  toolDescriptionAtMost(1024),
  noJsonSchema,
  // OpenAI's JSON mode: https://platform.openai.com/docs/guides/structured-outputs#json-mode
  jsonWordInPrompt,
  // https://platform.openai.com/docs/api-reference/chat/create (stream_options)
  streamOptionsOnlyWithStream,
  // Not in OpenAI's message schema: https://platform.openai.com/docs/api-reference/chat/create (messages)
  noMessageField('reasoning_content'),
  // Only OpenAI's reasoning models take these: https://platform.openai.com/docs/guides/reasoning
  unsupportedParameter('reasoning_effort'),
  unsupportedParameter('max_completion_tokens'),
  // Missing from Ollama's field list: https://github.com/ollama/ollama/blob/main/docs/openai.md
  unsupportedParameter('tool_choice'),
];

/** A conservative server (profile `generic`). */
export function startGeneric(): Promise<Emulator> {
  return startEmulator({ provider: 'generic', rules: GENERIC_RULES, errorBody: openaiErrorBody });
}
