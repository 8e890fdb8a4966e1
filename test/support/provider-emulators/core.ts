/**
 * What every provider emulator shares: a ScriptedModelServer (model-server.ts) whose requests are
 * first checked by the provider's rules, each rule refusing what the provider documents it refuses,
 * with that provider's HTTP status and error body. The models behind an emulator are scripted as on
 * any ScriptedModelServer (`server.on(model, handler)`); a refused request never reaches them and
 * is kept in `server.refused()`.
 */
import { ScriptedModelServer, type RecordedRequest, type Reply, type StreamOptions } from '../model-server.js';

/** A refusal: the HTTP status, the message, and the parameter it names (when the provider names one). */
export interface Refusal {
  status: number;
  message: string;
  param?: string | null;
  code?: string | null;
}

/** One documented rule: a refusal for a request that breaks it, else undefined. */
export type Rule = (req: RecordedRequest) => Refusal | undefined;

export interface EmulatorSpec {
  /** The provider profile this server stands for (models/provider-profiles.ts). */
  provider: string;
  rules: Rule[];
  /** The provider's error body for a refusal. */
  errorBody: (refusal: Refusal) => unknown;
  /** How it streams (e.g. older Ollama: tool calls without index). */
  stream?: StreamOptions;
  /** The path clients are given (default `/v1`). */
  basePath?: string;
}

export interface Emulator {
  provider: string;
  server: ScriptedModelServer;
  /** What to give the OpenAI client as `baseURL`. */
  baseURL: string;
  close(): Promise<void>;
}

/** Starts an emulator on 127.0.0.1 (ephemeral port). */
export async function startEmulator(spec: EmulatorSpec): Promise<Emulator> {
  const check = (req: RecordedRequest): Reply | undefined => {
    for (const rule of spec.rules) {
      const refusal = rule(req);
      if (refusal) return { status: refusal.status, body: spec.errorBody(refusal) };
    }
    return undefined;
  };
  const server = await ScriptedModelServer.start({ check });
  if (spec.stream) server.streamWith(spec.stream);
  return {
    provider: spec.provider,
    server,
    baseURL: `http://127.0.0.1:${server.port}${spec.basePath ?? '/v1'}`,
    close: () => server.close(),
  };
}

/** OpenAI's error body, which DeepSeek and Ollama copy: `{ error: { message, type, param, code } }`. */
export function openaiErrorBody(refusal: Refusal): unknown {
  return {
    error: {
      message: refusal.message,
      type: 'invalid_request_error',
      param: refusal.param ?? null,
      code: refusal.code ?? null,
    },
  };
}

// Readers of the raw request body, shared by the rules.

export function bodyMessages(req: RecordedRequest): Array<Record<string, unknown>> {
  const messages = req.body['messages'];
  return Array.isArray(messages) ? messages.filter(isRecord) : [];
}

export function textOf(message: Record<string, unknown>): string {
  const content = message['content'];
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((p) => (isRecord(p) && typeof p['text'] === 'string' ? p['text'] : '')).join('');
}

export function responseFormatType(req: RecordedRequest): string | undefined {
  const format = req.body['response_format'];
  return isRecord(format) && typeof format['type'] === 'string' ? format['type'] : undefined;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A parameter the provider does not take at all. */
export function unsupportedParameter(name: string, message?: string): Rule {
  return (req) =>
    name in req.body
      ? {
          status: 400,
          message: message ?? `Unsupported parameter: '${name}' is not supported with this model.`,
          param: name,
          code: 'unsupported_parameter',
        }
      : undefined;
}

/** A tool whose description is longer than `max` characters. */
export function toolDescriptionAtMost(max: number): Rule {
  return (req) => {
    const index = req.tools.findIndex((t) => t.description.length > max);
    if (index < 0) return undefined;
    const length = req.tools[index]!.description.length;
    return {
      status: 400,
      message: `Invalid 'tools[${index}].function.description': string too long. Expected a string with maximum length ${max}, but got a string with length ${length} instead.`,
      param: `tools[${index}].function.description`,
      code: 'string_above_max_length',
    };
  };
}

/** `response_format: json_object` without the word "json" in the messages. */
export const jsonWordInPrompt: Rule = (req) =>
  responseFormatType(req) === 'json_object' && !bodyMessages(req).some((m) => /json/i.test(textOf(m)))
    ? {
        status: 400,
        message:
          "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
        param: 'messages',
        code: null,
      }
    : undefined;

/** `stream_options` on a request that does not stream. */
export const streamOptionsOnlyWithStream: Rule = (req) =>
  'stream_options' in req.body && req.body['stream'] !== true
    ? {
        status: 400,
        message: "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
        param: 'stream_options',
        code: null,
      }
    : undefined;

/** A message field the provider's message schema does not have (e.g. `reasoning_content` for OpenAI). */
export function noMessageField(field: string): Rule {
  return (req) => {
    const index = bodyMessages(req).findIndex((m) => field in m);
    return index < 0
      ? undefined
      : {
          status: 400,
          message: `Additional properties are not allowed ('${field}' was unexpected) - 'messages.${index}'`,
          param: `messages.[${index}]`,
          code: null,
        };
  };
}
