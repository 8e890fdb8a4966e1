/** vLLM's OpenAI-compatible server, started with or without tool calling, with a chat template that may demand alternation. */
import { bodyMessages, startEmulator, type Emulator, type Refusal, type Rule } from './core.js';

/**
 * Tools with `tool_choice` "auto" (the default when tools are sent) need the server started with
 * `--enable-auto-tool-choice --tool-call-parser <parser>`.
 * https://docs.vllm.ai/en/latest/features/tool_calling/ ("Automatic Function Calling")
 */
const autoToolChoiceNeedsFlags: Rule = (req) =>
  req.tools.length > 0 && (req.body['tool_choice'] ?? 'auto') === 'auto'
    ? {
        status: 400,
        message: '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
      }
    : undefined;

/**
 * Chat templates such as Mistral's and Gemma's raise "Conversation roles must alternate
 * user/assistant/user/assistant/..." (vLLM answers 400): user and assistant text messages must alternate
 * (tool calls and their results sit between them).
 * https://docs.vllm.ai/en/latest/serving/openai_compatible_server/#chat-template
 */
const rolesAlternate: Rule = (req) => {
  const turns = bodyMessages(req).filter(
    (m) => m['role'] === 'user' || (m['role'] === 'assistant' && !Array.isArray(m['tool_calls'])),
  );
  const index = turns.findIndex((m, i) => i > 0 && m['role'] === turns[i - 1]!['role']);
  return index < 0
    ? undefined
    : { status: 400, message: 'Conversation roles must alternate user/assistant/user/assistant/...' };
};

/**
 * vLLM's error body today (`ErrorResponse { error: ErrorInfo }` in vllm/entrypoints/openai/protocol.py:
 * `{ error: { message, type, param, code } }`, `code` the HTTP status as a number).
 */
function vllmErrorBody(refusal: Refusal): unknown {
  return { error: { message: refusal.message, type: 'BadRequestError', param: null, code: refusal.status } };
}

/**
 * The body older vLLM releases answered with (their ErrorResponse was flat:
 * `{ object: "error", message, type, param, code }`), which the openai client cannot read a message from.
 */
function legacyVllmErrorBody(refusal: Refusal): unknown {
  return { object: 'error', message: refusal.message, type: 'BadRequestError', param: null, code: refusal.status };
}

export interface VllmOptions {
  /** Started with `--enable-auto-tool-choice --tool-call-parser hermes` (default true). */
  toolCalling?: boolean;
  /** The model's chat template demands alternating roles (Mistral, Gemma; default true). */
  alternatingTemplate?: boolean;
  /** Answer errors in the flat body of older vLLM releases (default false). */
  legacyErrorBody?: boolean;
}

/** vLLM (profile `vllm`). */
export function startVllm(options: VllmOptions = {}): Promise<Emulator> {
  const rules: Rule[] = [];
  if (options.toolCalling === false) rules.push(autoToolChoiceNeedsFlags);
  if (options.alternatingTemplate !== false) rules.push(rolesAlternate);
  return startEmulator({
    provider: 'vllm',
    rules,
    errorBody: options.legacyErrorBody ? legacyVllmErrorBody : vllmErrorBody,
  });
}
