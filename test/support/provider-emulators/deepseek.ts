/** DeepSeek's API: deepseek-chat, and deepseek-reasoner (thinking mode). */
import {
  bodyMessages,
  jsonWordInPrompt,
  openaiErrorBody,
  responseFormatType,
  startEmulator,
  type Emulator,
  type Rule,
} from './core.js';

/**
 * `response_format.type` is `text` or `json_object`; there is no `json_schema`.
 * https://api-docs.deepseek.com/api/create-chat-completion (response_format)
 */
const textOrJsonObject: Rule = (req) => {
  const type = responseFormatType(req);
  return type === undefined || type === 'text' || type === 'json_object'
    ? undefined
    : {
        status: 400,
        message: `This response_format type is unavailable now: ${type}`,
        param: 'response_format',
        code: 'invalid_request_error',
      };
};

/**
 * JSON output: "Include the word 'json' in the system or user prompt".
 * https://api-docs.deepseek.com/guides/json_mode
 */
export const DEEPSEEK_CHAT_RULES: Rule[] = [textOrJsonObject, jsonWordInPrompt];

/**
 * In thinking mode, within one turn's tool loop (the messages after the newest user message) every
 * assistant message that made tool calls must carry its `reasoning_content` back, or the API answers 400.
 * https://api-docs.deepseek.com/guides/thinking_mode (tool calls)
 */
const reasoningBackInToolLoop: Rule = (req) => {
  const messages = bodyMessages(req);
  let lastUser = -1;
  messages.forEach((m, i) => {
    if (m['role'] === 'user') lastUser = i;
  });
  const index = messages.findIndex(
    (m, i) =>
      i > lastUser &&
      m['role'] === 'assistant' &&
      Array.isArray(m['tool_calls']) &&
      !(typeof m['reasoning_content'] === 'string' && m['reasoning_content'] !== ''),
  );
  return index < 0
    ? undefined
    : {
        status: 400,
        message: `Missing \`reasoning_content\` field in the assistant message at message index ${index}.`,
        param: null,
        code: 'invalid_request_error',
      };
};

/**
 * deepseek-reasoner does not support successive user or assistant messages.
 * https://api-docs.deepseek.com/guides/reasoning_model (multi-round conversation)
 */
const noSuccessiveRoles: Rule = (req) => {
  const roles = bodyMessages(req).map((m) => m['role']);
  const index = roles.findIndex((r, i) => i > 0 && (r === 'user' || r === 'assistant') && roles[i - 1] === r);
  return index < 0
    ? undefined
    : {
        status: 400,
        message: `deepseek-reasoner does not support successive user or assistant messages (messages[${index - 1}] and messages[${index}] in your input). You should interleave the user/assistant messages in the message sequence.`,
        param: null,
        code: 'invalid_request_error',
      };
};

/** Thinking mode: the chat rules, reasoning carried back in a tool loop, no successive roles. */
export const DEEPSEEK_REASONER_RULES: Rule[] = [...DEEPSEEK_CHAT_RULES, reasoningBackInToolLoop, noSuccessiveRoles];

/** deepseek-chat (profile `deepseek`). */
export function startDeepSeekChat(): Promise<Emulator> {
  return startEmulator({ provider: 'deepseek', rules: DEEPSEEK_CHAT_RULES, errorBody: openaiErrorBody });
}

/**
 * deepseek-reasoner (profile `deepseek-reasoner`). Its answers carry `reasoning_content`: script
 * them with a `reasoning` field (model-server.ts streams it before the text).
 */
export function startDeepSeekReasoner(): Promise<Emulator> {
  return startEmulator({ provider: 'deepseek-reasoner', rules: DEEPSEEK_REASONER_RULES, errorBody: openaiErrorBody });
}
