/**
 * Provider profiles: what a chat-completions request may carry, per endpoint and model. Each
 * OpenAI-compatible server documents its own subset of OpenAI's parameters and refuses the rest
 * with a 400; the OpenAI provider shapes every request by the profile of its role
 * (models/request-shaping.ts), and `harness doctor` and the worker's start-up check send one request
 * of that shape to prove it (models/model-check.ts).
 *
 * A profile is chosen per role: `HARNESS_<ROLE>_PROVIDER`, else `HARNESS_PROVIDER`, else detected
 * from the base URL and the role's model name. `HARNESS_PROVIDER_OVERRIDES` (JSON, every role) and
 * `HARNESS_<ROLE>_PROVIDER_OVERRIDES` (one role, applied after) change single fields;
 * `HARNESS_JSON_MODE` overrides the JSON mode of every role. Pure: no I/O.
 */
import { z } from 'zod';
import { ROLES, type Role } from './roles.js';

/** The profile names, as `HARNESS_PROVIDER` takes them. */
export const PROVIDER_NAMES = [
  'openai',
  'openai-reasoning',
  'azure-openai',
  'deepseek',
  'deepseek-reasoner',
  'vllm',
  'ollama',
  'generic',
] as const;
export const ProviderName = z.enum(PROVIDER_NAMES);
export type ProviderName = z.infer<typeof ProviderName>;

/**
 * How a helper call asks for JSON: `json_schema` (strict structured output, the role's schema sent
 * along), `json_object` (JSON mode: any JSON object; the prompt must say "json" and describe the
 * shape, which every helper prompt does), or `prompt` (no `response_format`: the prompt alone asks).
 */
export const JsonMode = z.enum(['json_schema', 'json_object', 'prompt']);
export type JsonMode = z.infer<typeof JsonMode>;

/** `reasoning_effort` values the harness passes on (the provider maps or refuses what it does not know). */
export const ReasoningEffort = z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh']);
export type ReasoningEffort = z.infer<typeof ReasoningEffort>;

/** What one endpoint and model accept; every field can be overridden. */
export const ProviderProfile = z.object({
  /** The parameter that caps a helper's answer. */
  tokenLimit: z.enum(['max_completion_tokens', 'max_tokens']),
  /** Whether `temperature` (and `top_p`) may be sent; reasoning models accept only their default. */
  temperature: z.boolean(),
  /** Whether `reasoning_effort` may be sent (it is sent only when a role sets one). */
  reasoningEffort: z.boolean(),
  jsonMode: JsonMode,
  /** Longest tool description, in characters; null: no limit. Longer ones are clipped and marked. */
  toolDescriptionMax: z.number().int().min(32).nullable(),
  /** Whether `tool_choice` may be sent (the harness sends `auto` with tools where it may). */
  toolChoice: z.boolean(),
  /** Whether the agent step streams; off: one plain completion. */
  stream: z.boolean(),
  /** Whether `stream_options: {include_usage: true}` may be sent (else a stream reports no usage). */
  streamUsage: z.boolean(),
  /** Whether an assistant message with tool calls must carry its `reasoning_content` back within the tool loop. */
  reasoningBack: z.boolean(),
  /** Whether user and assistant messages must alternate (adjacent messages of one role are merged). */
  alternateRoles: z.boolean(),
  /**
   * Tokens added to a helper's default answer limit: a reasoning model counts its thinking in the
   * same limit, and a small JSON answer after a long thought would otherwise be cut.
   */
  reasoningTokens: z.number().int().min(0),
});
export type ProviderProfile = z.infer<typeof ProviderProfile>;

/** Field-by-field changes to a profile (`HARNESS_PROVIDER_OVERRIDES`); unknown fields are refused. */
export const ProfileOverrides = ProviderProfile.partial().strict();
export type ProfileOverrides = z.infer<typeof ProfileOverrides>;

/**
 * The profiles. Each row cites the provider's documentation for what it accepts.
 */
export const PROFILES: Record<ProviderName, ProviderProfile> = {
  // OpenAI chat models (gpt-4o, gpt-4.1, ...). `max_tokens` is deprecated in favour of
  // `max_completion_tokens`; function descriptions are limited to 1,024 characters; strict
  // structured outputs, `tool_choice` and `stream_options.include_usage` are accepted.
  // https://platform.openai.com/docs/api-reference/chat/create
  // https://platform.openai.com/docs/guides/structured-outputs
  openai: {
    tokenLimit: 'max_completion_tokens',
    temperature: true,
    reasoningEffort: false,
    jsonMode: 'json_schema',
    toolDescriptionMax: 1024,
    toolChoice: true,
    stream: true,
    streamUsage: true,
    reasoningBack: false,
    alternateRoles: false,
    reasoningTokens: 0,
  },
  // OpenAI reasoning models (gpt-5, gpt-5-mini, gpt-5-nano, o1, o3, o4-mini): only
  // `max_completion_tokens`; `temperature`/`top_p` other than the default are refused with
  // "Unsupported value"; `reasoning_effort` is accepted; reasoning tokens count in the limit.
  // https://platform.openai.com/docs/guides/reasoning
  // https://platform.openai.com/docs/api-reference/chat/create (max_tokens: "not compatible with o-series models")
  'openai-reasoning': {
    tokenLimit: 'max_completion_tokens',
    temperature: false,
    reasoningEffort: true,
    jsonMode: 'json_schema',
    toolDescriptionMax: 1024,
    toolChoice: true,
    stream: true,
    streamUsage: true,
    reasoningBack: false,
    alternateRoles: false,
    reasoningTokens: 4096,
  },
  // Azure OpenAI (the v1 API, https://<resource>.openai.azure.com/openai/v1/): the OpenAI request
  // shape with deployment names as models. A reasoning deployment needs `temperature: false`
  // (detected when the deployment is named like the model).
  // https://learn.microsoft.com/azure/ai-foundry/openai/reference
  // https://learn.microsoft.com/azure/ai-foundry/openai/how-to/reasoning
  'azure-openai': {
    tokenLimit: 'max_completion_tokens',
    temperature: true,
    reasoningEffort: false,
    jsonMode: 'json_schema',
    toolDescriptionMax: 1024,
    toolChoice: true,
    stream: true,
    streamUsage: true,
    reasoningBack: false,
    alternateRoles: false,
    reasoningTokens: 0,
  },
  // DeepSeek chat (deepseek-chat): `max_tokens`; `response_format` takes `text` or `json_object`
  // only, and JSON mode wants the word "json" and an example of the shape in the prompt.
  // https://api-docs.deepseek.com/api/create-chat-completion
  // https://api-docs.deepseek.com/guides/json_mode
  deepseek: {
    tokenLimit: 'max_tokens',
    temperature: true,
    reasoningEffort: false,
    jsonMode: 'json_object',
    toolDescriptionMax: 1024,
    toolChoice: true,
    stream: true,
    streamUsage: true,
    reasoningBack: false,
    alternateRoles: false,
    reasoningTokens: 0,
  },
  // DeepSeek thinking mode (deepseek-reasoner): temperature/top_p have no effect (left out);
  // an assistant turn that made tool calls must carry its `reasoning_content` back in every later
  // request, or the API answers 400; successive messages of one role are refused by the reasoner.
  // https://api-docs.deepseek.com/guides/thinking_mode
  // https://api-docs.deepseek.com/guides/reasoning_model
  'deepseek-reasoner': {
    tokenLimit: 'max_tokens',
    temperature: false,
    reasoningEffort: true,
    jsonMode: 'json_object',
    toolDescriptionMax: 1024,
    toolChoice: false,
    stream: true,
    streamUsage: true,
    reasoningBack: true,
    alternateRoles: true,
    reasoningTokens: 8192,
  },
  // vLLM's OpenAI-compatible server: `max_tokens`, guided decoding for `json_schema`; tools need
  // the server started with `--enable-auto-tool-choice --tool-call-parser <name>`; many chat
  // templates (Mistral, Gemma) demand alternating user/assistant messages.
  // https://docs.vllm.ai/en/latest/features/tool_calling/
  // https://docs.vllm.ai/en/latest/serving/openai_compatible_server/
  vllm: {
    tokenLimit: 'max_tokens',
    temperature: true,
    reasoningEffort: false,
    jsonMode: 'json_object',
    toolDescriptionMax: null,
    toolChoice: true,
    stream: true,
    streamUsage: true,
    reasoningBack: false,
    alternateRoles: true,
    reasoningTokens: 0,
  },
  // Ollama's OpenAI compatibility: `max_tokens`, `response_format` json_object, tools and
  // `stream_options.include_usage`; `tool_choice` is missing from older versions' field list;
  // model templates (Gemma, Mistral) may demand alternation.
  // https://docs.ollama.com/api/openai-compatibility
  ollama: {
    tokenLimit: 'max_tokens',
    temperature: true,
    reasoningEffort: false,
    jsonMode: 'json_object',
    toolDescriptionMax: null,
    toolChoice: false,
    stream: true,
    streamUsage: true,
    reasoningBack: false,
    alternateRoles: true,
    reasoningTokens: 0,
  },
  // Anything else: the parameters every OpenAI-compatible server named in docs/operations.md
  // accepts (`max_tokens`, `temperature`, `json_object`), OpenAI's 1,024-character tool
  // descriptions, no `tool_choice`, no `reasoning_effort`.
  generic: {
    tokenLimit: 'max_tokens',
    temperature: true,
    reasoningEffort: false,
    jsonMode: 'json_object',
    toolDescriptionMax: 1024,
    toolChoice: false,
    stream: true,
    streamUsage: true,
    reasoningBack: false,
    alternateRoles: false,
    reasoningTokens: 0,
  },
};

/** OpenAI reasoning model names: gpt-5 and its sizes (not gpt-5-chat), o1, o3, o4-mini and later o-series. */
const OPENAI_REASONING_MODEL = /^(?:.*\/)?(?:gpt-5(?!(?:\.\d+)?-chat)|o\d)/i;
const DEEPSEEK_REASONER_MODEL = /deepseek-(?:reasoner|r1)/i;
const DEEPSEEK_MODEL = /^(?:.*\/)?deepseek-/i;

/** How a role's profile was chosen, for the start-up log and `harness doctor`. */
export type ProfileSource = 'HARNESS_PROVIDER' | `HARNESS_${Uppercase<Role>}_PROVIDER` | 'detected';

/** A role's profile after overrides, and how it came to be. */
export interface ResolvedProfile {
  name: ProviderName;
  profile: ProviderProfile;
  source: ProfileSource;
  /** Why detection chose the name (empty when a variable named it). */
  reason: string;
  /** The fields changed from the named profile, and by which variable. */
  overrides: Array<{ field: keyof ProviderProfile; value: unknown; from: string }>;
  /** `reasoning_effort` for this role (`HARNESS_<ROLE>_REASONING_EFFORT`, else `HARNESS_REASONING_EFFORT`). */
  reasoningEffort: ReasoningEffort | undefined;
}

/**
 * The profile an endpoint and model name suggest, and why. The endpoint decides first (Azure,
 * Ollama, vLLM, DeepSeek, OpenAI); on OpenAI's own endpoint, or one that says nothing, the model
 * name does (so `gpt-5-mini` behind a proxy still gets the reasoning profile).
 */
export function detectProvider(
  baseURL: string | undefined,
  model: string | undefined,
): { name: ProviderName; reason: string } {
  const name = model ?? '';
  let url: URL | undefined;
  try {
    url = baseURL ? new URL(baseURL) : undefined;
  } catch {
    url = undefined;
  }
  const host = url?.hostname.toLowerCase() ?? '';
  if (/\.openai\.azure\.com$|\.cognitiveservices\.azure\.com$|\.services\.ai\.azure\.com$/.test(host))
    return { name: 'azure-openai', reason: `Azure host ${host}` };
  if (url && (url.port === '11434' || host.includes('ollama')))
    return { name: 'ollama', reason: url.port === '11434' ? "port 11434 (Ollama's default)" : `host ${host}` };
  if (url && (url.port === '8000' || host.includes('vllm')))
    return { name: 'vllm', reason: url.port === '8000' ? "port 8000 (vLLM's default)" : `host ${host}` };
  if (host === 'api.deepseek.com' || DEEPSEEK_MODEL.test(name)) {
    const where = host === 'api.deepseek.com' ? `host ${host}` : `model name ${name}`;
    return DEEPSEEK_REASONER_MODEL.test(name)
      ? { name: 'deepseek-reasoner', reason: `${where}, reasoner model ${name}` }
      : { name: 'deepseek', reason: where };
  }
  const openaiHost = !url || host === 'api.openai.com';
  if (OPENAI_REASONING_MODEL.test(name))
    return { name: 'openai-reasoning', reason: `reasoning model name ${name}${openaiHost ? '' : ` on ${host}`}` };
  if (openaiHost) return { name: 'openai', reason: url ? `host ${host}` : 'no OPENAI_BASE_URL (OpenAI itself)' };
  return { name: 'generic', reason: `unknown endpoint ${host}` };
}

/** What the environment may say about profiles (the variables of worker/config.ts). */
export interface ProfileSettings {
  baseURL: string | undefined;
  /** Model per role. */
  models: Partial<Record<Role, string>>;
  /** `HARNESS_PROVIDER`. */
  provider?: ProviderName | undefined;
  /** `HARNESS_<ROLE>_PROVIDER`. */
  providerByRole?: Partial<Record<Role, ProviderName>>;
  /** `HARNESS_PROVIDER_OVERRIDES`, parsed. */
  overrides?: ProfileOverrides | undefined;
  /** `HARNESS_<ROLE>_PROVIDER_OVERRIDES`, parsed. */
  overridesByRole?: Partial<Record<Role, ProfileOverrides>>;
  /** `HARNESS_JSON_MODE`: the JSON mode of every role, whatever the profile says. */
  jsonMode?: JsonMode | undefined;
  /** `HARNESS_REASONING_EFFORT`. */
  reasoningEffort?: ReasoningEffort | undefined;
  /** `HARNESS_<ROLE>_REASONING_EFFORT`. */
  reasoningEffortByRole?: Partial<Record<Role, ReasoningEffort>>;
}

const envName = (role: Role, what: string) => `HARNESS_${role.toUpperCase()}_${what}`;

/** One role's profile: named or detected, then overridden field by field. */
export function resolveProfile(role: Role, settings: ProfileSettings): ResolvedProfile {
  const model = settings.models[role];
  const byRole = settings.providerByRole?.[role];
  let name: ProviderName;
  let source: ProfileSource;
  let reason = '';
  if (byRole) {
    name = byRole;
    source = envName(role, 'PROVIDER') as ProfileSource;
  } else if (settings.provider) {
    name = settings.provider;
    source = 'HARNESS_PROVIDER';
  } else {
    ({ name, reason } = detectProvider(settings.baseURL, model));
    source = 'detected';
  }
  const overrides: ResolvedProfile['overrides'] = [];
  const profile: ProviderProfile = { ...PROFILES[name] };
  const apply = (changes: ProfileOverrides | undefined, from: string) => {
    for (const [field, value] of Object.entries(changes ?? {}) as Array<[keyof ProviderProfile, never]>) {
      if (value === undefined) continue;
      profile[field] = value;
      overrides.push({ field, value, from });
    }
  };
  // A reasoning deployment on Azure refuses temperature like OpenAI's own (detected by its name only).
  if (name === 'azure-openai' && source === 'detected' && model && OPENAI_REASONING_MODEL.test(model)) {
    apply(
      { temperature: false, reasoningEffort: true, reasoningTokens: PROFILES['openai-reasoning'].reasoningTokens },
      `reasoning model name ${model}`,
    );
  }
  apply(settings.overrides, 'HARNESS_PROVIDER_OVERRIDES');
  apply(settings.overridesByRole?.[role], envName(role, 'PROVIDER_OVERRIDES'));
  if (settings.jsonMode) apply({ jsonMode: settings.jsonMode }, 'HARNESS_JSON_MODE');
  const effort = settings.reasoningEffortByRole?.[role] ?? settings.reasoningEffort;
  return { name, profile, source, reason, overrides, reasoningEffort: effort };
}

/** Every role's profile. */
export function resolveProfiles(settings: ProfileSettings): Record<Role, ResolvedProfile> {
  const out = {} as Record<Role, ResolvedProfile>;
  for (const role of ROLES) out[role] = resolveProfile(role, settings);
  return out;
}

/**
 * One line per role for the start-up log: endpoint, model, profile, how it was chosen, overrides,
 * and a reasoning effort the profile will not send.
 */
export function describeProfile(
  role: Role,
  resolved: ResolvedProfile,
  baseURL: string | undefined,
  model: string | undefined,
): string {
  const how = resolved.source === 'detected' ? `detected: ${resolved.reason}` : `from ${resolved.source}`;
  const changed = resolved.overrides.map((o) => `${o.field}=${JSON.stringify(o.value)} (${o.from})`);
  const effort =
    resolved.reasoningEffort === undefined
      ? ''
      : resolved.profile.reasoningEffort
        ? `, reasoning_effort ${resolved.reasoningEffort}`
        : `, reasoning_effort ${resolved.reasoningEffort} not sent (the profile does not accept it)`;
  return (
    `provider ${role}: ${baseURL ?? 'https://api.openai.com/v1'} model ${model ?? '(none)'} profile ${resolved.name} (${how})` +
    `${changed.length > 0 ? `, overrides ${changed.join(', ')}` : ''}${effort}`
  );
}

/**
 * Parses an overrides variable (JSON object of profile fields). Throws an Error naming the variable
 * and the bad field.
 */
export function parseOverrides(variable: string, text: string | undefined): ProfileOverrides | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`${variable}: not JSON: ${(err as Error).message}`);
  }
  const parsed = ProfileOverrides.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new Error(`${variable}: ${issues} (fields: ${Object.keys(ProviderProfile.shape).join(', ')})`);
  }
  return parsed.data;
}
