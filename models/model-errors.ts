/**
 * How model failures become Temporal failures: 429, 5xx, timeouts and connection errors are
 * retryable (the server's retry-after becomes nextRetryDelay); other 4xx and invalid output are
 * not, so a broken answer degrades the input at once instead of burning retries. A 400 that says a
 * parameter or value is unsupported is a configuration error, with the setting that fixes it.
 */
import { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';
import type { z } from 'zod';
import { FAILURE } from '../contract/failures.js';

export const MAX_RETRY_AFTER_MS = 30_000;

/**
 * Seconds (or an HTTP date) from `retry-after`, or milliseconds from `retry-after-ms`, capped at
 * 30 s: a helper-model call must degrade an input, not stall the Session (the workflow's
 * schedule-to-close timeout bounds the whole call as well).
 */
export function retryAfterMs(headers: Headers | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = Number(headers.get('retry-after-ms'));
  if (headers.get('retry-after-ms') !== null && Number.isFinite(ms) && ms >= 0) return Math.min(ms, MAX_RETRY_AFTER_MS);
  const value = headers.get('retry-after');
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, MAX_RETRY_AFTER_MS);
  const date = Date.parse(value);
  if (Number.isFinite(date)) return Math.min(Math.max(0, date - now), MAX_RETRY_AFTER_MS);
  return undefined;
}

/** Maps anything a model call threw to an ApplicationFailure with a type, retryability and delay. */
export function toModelFailure(err: unknown, role: string): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  const where = `${role} model`;
  if (err instanceof OpenAI.APIConnectionTimeoutError) {
    return ApplicationFailure.retryable(`${where} timed out`, FAILURE.ModelTimeout);
  }
  if (err instanceof OpenAI.APIConnectionError) {
    return ApplicationFailure.retryable(`${where} unreachable: ${err.message}`, FAILURE.ModelUnavailable);
  }
  if (err instanceof OpenAI.APIError && typeof err.status === 'number') {
    const message = `${where} answered HTTP ${err.status}: ${err.message}`;
    if (err.status === 429) {
      const delay = retryAfterMs(err.headers as Headers | undefined);
      return ApplicationFailure.create({
        message,
        type: FAILURE.ModelRateLimited,
        nonRetryable: false,
        ...(delay !== undefined ? { nextRetryDelay: delay } : {}),
      });
    }
    if (err.status === 408) return ApplicationFailure.retryable(message, FAILURE.ModelTimeout);
    if (err.status >= 500) return ApplicationFailure.retryable(message, FAILURE.ModelServerError);
    const refused = configRefusal(err.status, err.message, (err as { code?: unknown }).code);
    if (refused) return ApplicationFailure.nonRetryable(`${message}; fix: ${refused.fix}`, FAILURE.ModelConfigError);
    return ApplicationFailure.nonRetryable(message, FAILURE.ModelRequestRejected);
  }
  const message = err instanceof Error ? err.message : String(err);
  return ApplicationFailure.retryable(`${where} failed: ${message}`, FAILURE.ModelError);
}

/**
 * What a provider's refusal of a parameter or value looks like, and the setting that fixes it. The
 * texts are the providers' own (OpenAI's `unsupported_parameter`/`unsupported_value` codes and
 * messages, DeepSeek's response_format and reasoning_content errors, vLLM's tool-choice flag error,
 * chat templates' alternation error); the first match names the fix.
 */
const CONFIG_REFUSALS: Array<{ test: RegExp; fix: string }> = [
  {
    test: /max_tokens/i,
    fix: 'the endpoint wants max_completion_tokens: set HARNESS_PROVIDER=openai-reasoning (or HARNESS_PROVIDER_OVERRIDES={"tokenLimit":"max_completion_tokens"})',
  },
  {
    test: /max_completion_tokens/i,
    fix: 'the endpoint wants max_tokens: set HARNESS_PROVIDER_OVERRIDES={"tokenLimit":"max_tokens"} (or a matching HARNESS_PROVIDER)',
  },
  {
    test: /temperature|top_p/i,
    fix: 'the model accepts only its default temperature: set HARNESS_PROVIDER=openai-reasoning (or HARNESS_PROVIDER_OVERRIDES={"temperature":false})',
  },
  {
    test: /reasoning_effort/i,
    fix: 'unset HARNESS_REASONING_EFFORT / HARNESS_<ROLE>_REASONING_EFFORT, or set HARNESS_PROVIDER_OVERRIDES={"reasoningEffort":false}',
  },
  {
    test: /reasoning_content/i,
    fix: 'the model wants its reasoning back in tool loops: set HARNESS_AGENT_PROVIDER=deepseek-reasoner (or HARNESS_AGENT_PROVIDER_OVERRIDES={"reasoningBack":true})',
  },
  {
    test: /enable-auto-tool-choice|tool[-_ ]call[-_ ]parser/i,
    fix: 'start vLLM with --enable-auto-tool-choice --tool-call-parser <parser for the model> (docs/operations.md, "Providers")',
  },
  {
    test: /tool_choice/i,
    fix: 'set HARNESS_PROVIDER_OVERRIDES={"toolChoice":false}',
  },
  {
    test: /stream_options|include_usage/i,
    fix: 'set HARNESS_PROVIDER_OVERRIDES={"streamUsage":false}',
  },
  {
    test: /response_format|json_schema|json_object|word .?json/i,
    fix: 'set HARNESS_JSON_MODE=json_object (or prompt where the endpoint has no JSON mode)',
  },
  {
    test: /alternate|successive|consecutive/i,
    fix: 'the chat template wants alternating roles: set HARNESS_PROVIDER_OVERRIDES={"alternateRoles":true}',
  },
  {
    test: /description/i,
    fix: 'set HARNESS_PROVIDER_OVERRIDES={"toolDescriptionMax":1024} (or the limit the endpoint names)',
  },
  {
    test: /stream/i,
    fix: 'set HARNESS_AGENT_PROVIDER_OVERRIDES={"stream":false}',
  },
];

/** Words with which providers refuse a parameter or a value (as opposed to, say, a prompt that is too long). */
const REFUSAL_WORDS =
  /unsupported|not supported|does not support|unrecognized|unknown (?:parameter|field|argument)|extra (?:inputs|fields) are not permitted|is not permitted|requires --|must alternate|must be passed back|missing reasoning_content|invalid (?:parameter|value|type)|is unavailable|string too long|maximum length/i;

/**
 * The fix for a 400/422 that refuses a parameter or value the harness sent, or undefined when the
 * refusal is of something else (a prompt over the context length, a bad key).
 */
export function configRefusal(status: number, message: string, code?: unknown): { fix: string } | undefined {
  if (status !== 400 && status !== 422) return undefined;
  const coded = code === 'unsupported_parameter' || code === 'unsupported_value' || code === 'string_above_max_length';
  if (!coded && !REFUSAL_WORDS.test(message)) return undefined;
  const match = CONFIG_REFUSALS.find((r) => r.test.test(message));
  return { fix: match?.fix ?? 'check the provider profile (harness doctor; docs/operations.md, "Providers")' };
}

/**
 * A fetch for the openai client that lets it read the message of an error body written flat, as
 * older vLLM releases wrote theirs (`{ object: "error", message, type, param, code }`): the client
 * reads only `body.error`, so such a refusal came out as "400 status code (no body)" and no fix could
 * be named. The flat body is moved under `error`; every other response passes untouched.
 */
export function readableErrorBodies(
  fetchImpl: typeof fetch = fetch,
): (input: string | URL | Request, init?: RequestInit) => Promise<Response> {
  return async (input, init) => {
    const response = await fetchImpl(input, init);
    if (response.ok || !(response.headers.get('content-type') ?? '').includes('json')) return response;
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const flat =
      typeof body === 'object' &&
      body !== null &&
      !('error' in body) &&
      typeof (body as { message?: unknown }).message === 'string';
    // The body is read (and decoded) here: its length and encoding headers no longer describe it.
    const headers = new Headers(response.headers);
    headers.delete('content-length');
    headers.delete('content-encoding');
    const { status, statusText } = response;
    return new Response(flat ? JSON.stringify({ error: body }) : text, { status, statusText, headers });
  };
}

/**
 * The text inside a Markdown code fence that is the whole answer (an optional `json` tag and the
 * spaces around the text removed), or undefined when the answer is not fenced. Written without a
 * regular expression: `^\s*```(?:json)?\s*([\s\S]*?)\s*```\s*$` backtracks over every split of a
 * run of spaces, and a fence followed by 2,000 spaces took it 8.5 s.
 */
export function unfenced(content: string): string | undefined {
  const answer = content.trim();
  if (answer.length < 6 || !answer.startsWith('```') || !answer.endsWith('```')) return undefined;
  const inner = answer.slice(3, -3);
  return (inner.slice(0, 4).toLowerCase() === 'json' ? inner.slice(4) : inner).trim();
}

/**
 * Parses a model's JSON answer against the role's schema. Tolerates a Markdown code fence around the
 * JSON (some OpenAI-compatible servers add one even in JSON mode); anything else is invalid output.
 */
export function parseModelJson<T>(content: string | null | undefined, schema: z.ZodType<T>, role: string): T {
  const invalid = (why: string) =>
    ApplicationFailure.nonRetryable(`${role} model returned invalid output: ${why}`, FAILURE.ModelInvalidOutput);
  if (!content || !content.trim()) throw invalid('empty answer');
  let value: unknown;
  try {
    value = JSON.parse(unfenced(content) ?? content);
  } catch {
    throw invalid(`not JSON: ${content.slice(0, 120)}`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw invalid(issues);
  }
  return parsed.data;
}
