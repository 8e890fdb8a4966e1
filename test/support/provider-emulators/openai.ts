/**
 * OpenAI's Chat Completions API: chat models (gpt-4o-mini, gpt-4.1), reasoning models (gpt-5*,
 * o-series) and Azure OpenAI, which serves the same request shape under its own paths.
 */
import {
  isRecord,
  noMessageField,
  jsonWordInPrompt,
  openaiErrorBody,
  responseFormatType,
  startEmulator,
  streamOptionsOnlyWithStream,
  toolDescriptionAtMost,
  unsupportedParameter,
  type Emulator,
  type Refusal,
  type Rule,
} from './core.js';

/**
 * Strict `json_schema`: every object lists all its properties in `required` and sets
 * `additionalProperties: false`.
 * https://platform.openai.com/docs/guides/structured-outputs#supported-schemas
 */
const strictSchema: Rule = (req) => {
  if (responseFormatType(req) !== 'json_schema') return undefined;
  const format = req.body['response_format'] as Record<string, unknown>;
  const spec = isRecord(format['json_schema']) ? format['json_schema'] : {};
  if (spec['strict'] !== true) return undefined;
  const problem = strictProblem(spec['schema'], 'schema');
  return problem
    ? {
        status: 400,
        message: `Invalid schema for response_format '${String(spec['name'])}': In context=(${problem}).`,
        param: 'response_format',
        code: 'invalid_json_schema',
      }
    : undefined;
};

function strictProblem(schema: unknown, at: string): string | undefined {
  if (!isRecord(schema)) return undefined;
  if (schema['type'] === 'object' || isRecord(schema['properties'])) {
    const properties = isRecord(schema['properties']) ? Object.keys(schema['properties']) : [];
    const required = Array.isArray(schema['required']) ? schema['required'] : [];
    if (schema['additionalProperties'] !== false)
      return `${at}: 'additionalProperties' is required to be supplied and to be false`;
    const missing = properties.find((p) => !required.includes(p));
    if (missing)
      return `${at}: 'required' is required to be supplied and to be an array including every key in properties. Missing '${missing}'`;
  }
  for (const [key, value] of Object.entries(schema)) {
    const children = Array.isArray(value)
      ? value
      : isRecord(value) && key === 'properties'
        ? Object.values(value)
        : [value];
    for (const child of children) {
      const problem = isRecord(child) ? strictProblem(child, `${at}.${key}`) : undefined;
      if (problem) return problem;
    }
  }
  return undefined;
}

/**
 * The rules of OpenAI's chat models.
 * - Tool descriptions: at most 1,024 characters (the API answers `string_above_max_length`);
 *   https://platform.openai.com/docs/api-reference/chat/create (tools[].function).
 * - JSON mode needs the word "json" in the messages:
 *   https://platform.openai.com/docs/guides/structured-outputs#json-mode
 * - `stream_options` only with `stream: true`: https://platform.openai.com/docs/api-reference/chat/create
 * - Messages have a fixed schema; `reasoning_content` (DeepSeek's) is not in it:
 *   https://platform.openai.com/docs/api-reference/chat/create (messages).
 * - `reasoning_effort` is for reasoning models only: https://platform.openai.com/docs/guides/reasoning
 */
export const OPENAI_CHAT_RULES: Rule[] = [
  toolDescriptionAtMost(1024),
  strictSchema,
  jsonWordInPrompt,
  streamOptionsOnlyWithStream,
  noMessageField('reasoning_content'),
  unsupportedParameter('reasoning_effort', 'Unrecognized request argument supplied: reasoning_effort'),
];

/** `temperature`/`top_p` other than the default (1). */
function onlyDefault(name: 'temperature' | 'top_p'): Rule {
  return (req): Refusal | undefined =>
    name in req.body && req.body[name] !== 1
      ? {
          status: 400,
          message: `Unsupported value: '${name}' does not support ${String(req.body[name])} with this model. Only the default (1) value is supported.`,
          param: name,
          code: 'unsupported_value',
        }
      : undefined;
}

/** `reasoning_effort` values the reasoning models take. https://platform.openai.com/docs/api-reference/chat/create */
const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'];
const reasoningEffortValue: Rule = (req) =>
  'reasoning_effort' in req.body && !REASONING_EFFORTS.includes(String(req.body['reasoning_effort']))
    ? {
        status: 400,
        message: `Invalid value: '${String(req.body['reasoning_effort'])}'. Supported values are: ${REASONING_EFFORTS.map((e) => `'${e}'`).join(', ')}.`,
        param: 'reasoning_effort',
        code: 'invalid_value',
      }
    : undefined;

/**
 * The rules of OpenAI's reasoning models (gpt-5, gpt-5-mini, gpt-5-nano, o1, o3, o4-mini): the chat
 * rules, except that `reasoning_effort` is taken, plus:
 * - `max_tokens` is refused, `max_completion_tokens` is the limit: the API reference marks
 *   `max_tokens` "not compatible with o-series models";
 *   https://platform.openai.com/docs/api-reference/chat/create#chat-create-max_tokens
 * - `temperature` and `top_p` only at their default: https://platform.openai.com/docs/guides/reasoning
 */
export const OPENAI_REASONING_RULES: Rule[] = [
  ...OPENAI_CHAT_RULES.slice(0, -1),
  unsupportedParameter(
    'max_tokens',
    "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
  ),
  onlyDefault('temperature'),
  onlyDefault('top_p'),
  reasoningEffortValue,
];

/** OpenAI's chat models (profile `openai`). */
export function startOpenAIChat(): Promise<Emulator> {
  return startEmulator({ provider: 'openai', rules: OPENAI_CHAT_RULES, errorBody: openaiErrorBody });
}

/** OpenAI's reasoning models (profile `openai-reasoning`). */
export function startOpenAIReasoning(): Promise<Emulator> {
  return startEmulator({ provider: 'openai-reasoning', rules: OPENAI_REASONING_RULES, errorBody: openaiErrorBody });
}

/**
 * Azure OpenAI's paths: the v1 API at `/openai/v1/chat/completions` (api-version optional), or a
 * deployment at `/openai/deployments/<name>/chat/completions`, which needs `api-version`; anything
 * else is 404 "Resource not found".
 * https://learn.microsoft.com/azure/ai-foundry/openai/reference
 * https://learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle
 */
const azurePath: Rule = (req) => {
  if (req.path === '/openai/v1/chat/completions') return undefined;
  if (/^\/openai\/deployments\/[^/]+\/chat\/completions$/.test(req.path) && req.query?.get('api-version'))
    return undefined;
  return { status: 404, message: 'Resource not found', code: '404' };
};

/** Azure's error body: `{ error: { code, message } }`, with `param` and `type` on validation errors. */
function azureErrorBody(refusal: Refusal): unknown {
  if (refusal.status === 404) return { error: { code: '404', message: refusal.message } };
  return openaiErrorBody(refusal);
}

/** Azure OpenAI (profile `azure-openai`): OpenAI's chat rules under Azure's paths. */
export function startAzureOpenAI(): Promise<Emulator> {
  return startEmulator({
    provider: 'azure-openai',
    rules: [azurePath, ...OPENAI_CHAT_RULES],
    errorBody: azureErrorBody,
    basePath: '/openai/v1',
  });
}
