import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** A chat-completion request as the scripted server received it. */
export interface RecordedRequest {
  /** Request path without query string, e.g. `/v1/chat/completions`. */
  path: string;
  /** The query string's parameters (Azure's `api-version`); absent from hand-made requests. */
  query?: URLSearchParams;
  /** `body.model`, or `''` if absent. */
  model: string;
  /** Parsed JSON request body (`{}` if it was not a JSON object). */
  body: Record<string, unknown>;
  /** The request body exactly as the client serialized it. */
  raw: string;
  /**
   * `body.messages` with array-of-parts content flattened to its concatenated text (`''` for none),
   * an assistant message's `tool_calls` and a tool message's `tool_call_id` kept.
   */
  messages: RecordedMessage[];
  /** `body.tools` as function tools: name, description and JSON Schema parameters. */
  tools: Array<{ name: string; description: string; parameters: Record<string, unknown> }>;
  headers: Record<string, string | string[] | undefined>;
  /** `Date.now()` when the request body had been read. */
  receivedAt: number;
}

export interface RecordedMessage {
  role: string;
  content: string;
  toolCalls?: Array<{ id: string; name: string; arguments: string }>;
  toolCallId?: string;
}

/** One tool call the scripted model makes; object arguments are sent as their JSON text. */
export interface ScriptedToolCall {
  /** Defaults to `call_<n>`, unique within the server's lifetime. */
  id?: string;
  name: string;
  arguments: string | Record<string, unknown>;
}

/**
 * How the server answers one request:
 * - `{ json }`: 200 chat.completion whose assistant content is `JSON.stringify(json)`;
 * - `{ content, finishReason? }`: 200 chat.completion with this raw assistant content (e.g. malformed
 *   JSON), and `finish_reason` `length` when asked for (an answer cut at `max_tokens`);
 * - `{ toolCalls, content? }`: 200 chat.completion whose assistant message carries `tool_calls`
 *   (finish_reason `tool_calls`), with optional text alongside;
 * - `{ status, body?, headers? }`: HTTP error; `body` defaults to an OpenAI-style
 *   `{ error: { message, type, param, code } }`, a string body is sent raw;
 * - `{ delayMs, then }`: wait, then answer with `then` (dropped silently if the client has gone away);
 * - `{ hangUp: true }`: destroy the socket without answering.
 *
 * `reasoning` on an answer is sent as the message's `reasoning_content` (streamed before the text),
 * as DeepSeek's reasoner and vLLM's reasoning parsers do.
 *
 * A request with `stream: true` gets the same answer as Server-Sent Events (see StreamOptions); an
 * HTTP error or a hang-up stays what it is.
 */
export type Reply =
  | { json: unknown; usage?: ScriptedUsage; reasoning?: string }
  | { content: string; finishReason?: 'stop' | 'length'; usage?: ScriptedUsage; reasoning?: string }
  | { toolCalls: ScriptedToolCall[]; content?: string; usage?: ScriptedUsage; reasoning?: string }
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | { delayMs: number; then: Reply }
  | { hangUp: true };

/**
 * The `usage` block an answer reports. Without one the server estimates prompt and completion tokens
 * (~4 characters per token) and reports no cached or reasoning tokens.
 */
export interface ScriptedUsage {
  prompt: number;
  completion: number;
  /** `prompt_tokens_details.cached_tokens` */
  cached?: number;
  /** `completion_tokens_details.reasoning_tokens` */
  reasoning?: number;
}

/**
 * A provider-side prompt cache as OpenAI documents it: a request reuses the longest prefix it shares
 * with an earlier request to the same model, counted in 128-token blocks, and only once that prefix
 * reaches 1,024 tokens. The prefix is read from the request's `tools` then `messages`, serialized as
 * the provider renders them (tools first), at ~4 characters per token, the server's estimate.
 */
export const PROMPT_CACHE = { minTokens: 1024, blockTokens: 128, charsPerToken: 4 } as const;

/**
 * How a request that asks for `stream: true` is answered: Server-Sent Events of
 * `chat.completion.chunk` objects, the text and each tool call's arguments cut into pieces of
 * `chunkChars`, `delayMs` apart, then (when the request set `stream_options.include_usage`) a last
 * chunk with no choices and the usage, then `data: [DONE]`.
 */
export interface StreamOptions {
  /** Characters per content or arguments piece (default 8). */
  chunkChars?: number;
  /** Wait before each chunk after the first (default 0). */
  delayMs?: number;
  /**
   * How tool calls are streamed: `indexed` (default: OpenAI's shape, a head delta with `index`, id and
   * name, then argument pieces at that index) or `whole-without-index` (older Ollama: each call in one
   * delta, with its id and whole arguments and no `index`).
   */
  toolCalls?: 'indexed' | 'whole-without-index';
  /** Answer a stream request with a plain `chat.completion` JSON body instead, as some servers do. */
  plainJson?: boolean;
}

/**
 * Checks a request before it is answered, as a provider validates it: a Reply (an HTTP error in the
 * provider's own body shape) refuses it, undefined lets it through to the model's handler.
 */
export type RequestCheck = (req: RecordedRequest) => Reply | undefined;

/** Computes the reply for a request; a thrown error becomes a 500 carrying its message. */
export type Handler = (req: RecordedRequest) => Reply | Promise<Reply>;

/**
 * An OpenAI-compatible HTTP server answering `/v1/chat/completions` from a per-model script,
 * so tests can drive the real `openai` client (and its retry/timeout logic) instead of mocks.
 */
export class ScriptedModelServer {
  /** `http://127.0.0.1:${port}/v1` — pass as the OpenAI client's `baseURL`. */
  readonly baseURL: string;
  readonly port: number;

  private readonly standing = new Map<string, Handler | Reply>();
  private readonly queues = new Map<string, Reply[]>();
  private recorded: RecordedRequest[] = [];
  private completionCount = 0;
  private toolCallCount = 0;
  /** Per model, the cache keys of the requests seen so far (only with `promptCache`). */
  private readonly cacheKeys = new Map<string, string[]>();
  private streaming: Required<StreamOptions> = {
    chunkChars: 8,
    delayMs: 0,
    toolCalls: 'indexed',
    plainJson: false,
  };
  private refusedRequests: Array<{ request: RecordedRequest; reply: Reply }> = [];

  private constructor(
    private readonly server: Server,
    private readonly promptCache: boolean,
    private readonly check: RequestCheck | undefined,
  ) {
    this.port = (server.address() as AddressInfo).port;
    this.baseURL = `http://127.0.0.1:${this.port}/v1`;
  }

  /**
   * Starts listening on 127.0.0.1 (an ephemeral port unless `port` is given). With `promptCache`,
   * answers without a scripted `usage` report the prompt from its serialized tools and messages and
   * the cached tokens a provider's prompt cache would (PROMPT_CACHE). With `check`, every request is
   * checked first and a refused one never reaches the script (see `refused()`).
   */
  static async start(
    options: { port?: number; promptCache?: boolean; check?: RequestCheck } = {},
  ): Promise<ScriptedModelServer> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const scripted = new ScriptedModelServer(server, options.promptCache ?? false, options.check);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      scripted.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) sendJson(res, 500, errorBody(messageOf(error), 'server_error'));
        else res.destroy();
      });
    });
    return scripted;
  }

  /** Sets the standing behaviour for `model`, used once its enqueued replies are exhausted. */
  on(model: string, handlerOrReply: Handler | Reply): this {
    this.standing.set(model, handlerOrReply);
    return this;
  }

  /** Queues one-shot replies for `model`, consumed first-in first-out before the standing behaviour. */
  enqueue(model: string, ...replies: Reply[]): this {
    const queue = this.queues.get(model) ?? [];
    queue.push(...replies);
    this.queues.set(model, queue);
    return this;
  }

  /** Sets how streamed answers are cut and paced (see StreamOptions); unset fields keep their value. */
  streamWith(options: StreamOptions): this {
    this.streaming = { ...this.streaming, ...options };
    return this;
  }

  /** Every chat-completion request received (optionally only for `model`), in arrival order. */
  requests(model?: string): RecordedRequest[] {
    return this.recorded.filter((r) => model === undefined || r.model === model);
  }

  /** The requests the `check` refused, with the refusal sent, in arrival order. */
  refused(): Array<{ request: RecordedRequest; reply: Reply }> {
    return [...this.refusedRequests];
  }

  /** Forgets all handlers, queued replies and recorded (and refused) requests. */
  reset(): void {
    this.standing.clear();
    this.queues.clear();
    this.recorded = [];
    this.refusedRequests = [];
  }

  /** Stops the server, destroying open (including keep-alive and delayed) connections so tests exit promptly. */
  close(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.close((error) => (error ? reject(error) : resolve()));
      this.server.closeAllConnections();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (req.method === 'GET' && (path === '/v1/models' || path === '/models')) {
      return sendJson(res, 200, { object: 'list', data: this.scriptedModels().map(modelObject) });
    }
    // Any `.../chat/completions` path: Azure's are `/openai/v1/...` and `/openai/deployments/<name>/...`.
    if (req.method !== 'POST' || !path.endsWith('/chat/completions')) {
      return sendJson(res, 404, errorBody(`no route for ${req.method} ${path}`, 'invalid_request_error', 'not_found'));
    }

    const raw = await readBody(req);
    const body = parseObject(raw);
    const model = typeof body?.['model'] === 'string' ? body['model'] : '';
    const recorded: RecordedRequest = {
      path,
      query: new URLSearchParams((req.url ?? '').split('?')[1] ?? ''),
      model,
      body: body ?? {},
      raw,
      messages: flattenMessages(body?.['messages']),
      tools: functionTools(body?.['tools']),
      headers: req.headers,
      receivedAt: Date.now(),
    };
    this.recorded.push(recorded);

    // Aborting on 'close' lets a delayed reply be dropped as soon as the client (or close()) ends the socket.
    const gone = new AbortController();
    res.once('close', () => gone.abort());

    let reply: Reply;
    try {
      const refusal = body && this.check ? this.check(recorded) : undefined;
      if (refusal) this.refusedRequests.push({ request: recorded, reply: refusal });
      reply = body
        ? (refusal ?? (await this.nextReply(recorded)))
        : { status: 400, body: errorBody('request body is not a JSON object') };
    } catch (error) {
      reply = { status: 500, body: errorBody(messageOf(error), 'server_error') };
    }

    await this.send(res, reply, recorded, gone.signal);
  }

  private nextReply(req: RecordedRequest): Reply | Promise<Reply> {
    const queued = this.queues.get(req.model)?.shift();
    if (queued) return queued;
    const standing = this.standing.get(req.model);
    if (standing === undefined) {
      return {
        status: 404,
        body: errorBody(`model '${req.model}' is not scripted`, 'invalid_request_error', 'model_not_found'),
      };
    }
    return typeof standing === 'function' ? standing(req) : standing;
  }

  private async send(res: ServerResponse, reply: Reply, req: RecordedRequest, gone: AbortSignal): Promise<void> {
    if ('delayMs' in reply) {
      try {
        await sleep(reply.delayMs, undefined, { signal: gone });
      } catch {
        return;
      }
      return this.send(res, reply.then, req, gone);
    }
    if (gone.aborted) return;
    if ('hangUp' in reply) {
      res.socket?.destroy();
      return;
    }
    if ('status' in reply) {
      return sendJson(res, reply.status, reply.body ?? defaultErrorBody(reply.status), reply.headers);
    }
    if (req.body['stream'] === true && !this.streaming.plainJson) return this.stream(res, reply, req, gone);
    if ('toolCalls' in reply) {
      const toolCalls = reply.toolCalls.map((call) => ({
        id: call.id ?? `call_${++this.toolCallCount}`,
        type: 'function',
        function: {
          name: call.name,
          arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
        },
      }));
      return sendJson(
        res,
        200,
        this.completion(req, reply.content ?? null, toolCalls, undefined, reply.usage, reply.reasoning),
      );
    }
    const content = 'json' in reply ? JSON.stringify(reply.json) : reply.content;
    sendJson(
      res,
      200,
      this.completion(
        req,
        content,
        undefined,
        'finishReason' in reply ? reply.finishReason : undefined,
        reply.usage,
        reply.reasoning,
      ),
    );
  }

  /** The same answer as `send` gives, as `chat.completion.chunk` events (see StreamOptions). */
  private async stream(
    res: ServerResponse,
    reply: Exclude<Reply, { delayMs: number } | { hangUp: true } | { status: number }>,
    req: RecordedRequest,
    gone: AbortSignal,
  ): Promise<void> {
    const toolCalls =
      'toolCalls' in reply
        ? reply.toolCalls.map((call) => ({
            id: call.id ?? `call_${++this.toolCallCount}`,
            name: call.name,
            arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
          }))
        : undefined;
    const content = 'json' in reply ? JSON.stringify(reply.json) : (reply.content ?? null);
    const finishReason = toolCalls ? 'tool_calls' : 'finishReason' in reply ? (reply.finishReason ?? 'stop') : 'stop';
    // The whole answer's usage, as the plain reply would report it.
    const whole = this.completion(
      req,
      content,
      toolCalls?.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
      undefined,
      reply.usage,
    );
    const streamOptions = req.body['stream_options'];
    const withUsage = isRecord(streamOptions) && streamOptions['include_usage'] === true;
    const { chunkChars, delayMs } = this.streaming;
    const pieces = (text: string) => {
      const out: string[] = [];
      for (let at = 0; at < text.length; at += chunkChars) out.push(text.slice(at, at + chunkChars));
      return out;
    };
    const deltas: Array<Record<string, unknown>> = [{ role: 'assistant', content: '' }];
    for (const piece of pieces(reply.reasoning ?? '')) deltas.push({ reasoning_content: piece });
    for (const piece of pieces(content ?? '')) deltas.push({ content: piece });
    for (const [index, call] of (toolCalls ?? []).entries()) {
      if (this.streaming.toolCalls === 'whole-without-index') {
        deltas.push({ tool_calls: [{ id: call.id, function: { name: call.name, arguments: call.arguments } }] });
        continue;
      }
      deltas.push({
        tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
      });
      for (const piece of pieces(call.arguments))
        deltas.push({ tool_calls: [{ index, function: { arguments: piece } }] });
    }
    const chunk = (choices: unknown[], usage?: unknown) => ({
      id: whole['id'],
      object: 'chat.completion.chunk',
      created: whole['created'],
      model: req.model,
      choices,
      ...(withUsage ? { usage: usage ?? null } : {}),
    });
    const chunks = [
      ...deltas.map((delta) => chunk([{ index: 0, delta, logprobs: null, finish_reason: null }])),
      chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: finishReason }]),
      ...(withUsage ? [chunk([], whole['usage'])] : []),
    ];
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    for (const [i, body] of chunks.entries()) {
      if (i > 0 && delayMs > 0) {
        try {
          await sleep(delayMs, undefined, { signal: gone });
        } catch {
          return;
        }
      }
      if (gone.aborted) return;
      res.write(`data: ${JSON.stringify(body)}\n\n`);
    }
    res.end('data: [DONE]\n\n');
  }

  private completion(
    req: RecordedRequest,
    content: string | null,
    toolCalls?: unknown[],
    finishReason?: 'stop' | 'length',
    scripted?: ScriptedUsage,
    reasoning?: string,
  ): Record<string, unknown> {
    const usage: Partial<ScriptedUsage> | undefined =
      scripted ?? (this.promptCache ? this.cachedUsage(req) : undefined);
    // Rough token estimate (~4 characters per token) so usage-accounting code sees plausible numbers.
    const promptTokens = usage?.prompt ?? Math.ceil(req.messages.reduce((n, m) => n + m.content.length, 0) / 4);
    const completionTokens =
      usage?.completion ?? Math.ceil(((content ?? '').length + JSON.stringify(toolCalls ?? []).length) / 4);
    return {
      id: `chatcmpl-scripted-${++this.completionCount}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: req.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content,
            refusal: null,
            ...(reasoning !== undefined ? { reasoning_content: reasoning } : {}),
            ...(toolCalls ? { tool_calls: toolCalls } : {}),
          },
          logprobs: null,
          finish_reason: toolCalls ? 'tool_calls' : (finishReason ?? 'stop'),
        },
      ],
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
        prompt_tokens_details: { cached_tokens: usage?.cached ?? 0 },
        completion_tokens_details: { reasoning_tokens: usage?.reasoning ?? 0 },
      },
    };
  }

  /** The prompt and cached tokens of `req` against the earlier requests to its model, then remembers it. */
  private cachedUsage(req: RecordedRequest): Pick<ScriptedUsage, 'prompt' | 'cached'> {
    const key = cacheKey(req.body);
    const seen = this.cacheKeys.get(req.model) ?? [];
    const shared = seen.reduce((best, earlier) => Math.max(best, commonPrefixLength(earlier, key)), 0);
    seen.push(key);
    this.cacheKeys.set(req.model, seen);
    const { minTokens, blockTokens, charsPerToken } = PROMPT_CACHE;
    const sharedTokens = Math.floor(shared / charsPerToken);
    const cached = sharedTokens < minTokens ? 0 : Math.floor(sharedTokens / blockTokens) * blockTokens;
    return { prompt: Math.ceil(key.length / charsPerToken), cached };
  }

  private scriptedModels(): string[] {
    const queued = [...this.queues].filter(([, replies]) => replies.length > 0).map(([model]) => model);
    return [...new Set([...this.standing.keys(), ...queued])];
  }
}

/** Ready-made replies for common fault injection. */
export const faults = {
  /** 429 with a `retry-after` header (seconds). */
  rateLimited(retryAfterSeconds = 1): Reply {
    return {
      status: 429,
      body: errorBody('Rate limit reached (scripted)', 'requests', 'rate_limit_exceeded'),
      headers: { 'retry-after': String(retryAfterSeconds) },
    };
  },
  /** 500 with an OpenAI-style error body. */
  serverError(): Reply {
    return { status: 500 };
  },
  /** 400 with an OpenAI-style error body carrying `message`. */
  badRequest(message = 'Bad request (scripted)'): Reply {
    return { status: 400, body: errorBody(message) };
  },
  /** Waits `ms`, then answers with `then`. */
  slow(ms: number, then: Reply): Reply {
    return { delayMs: ms, then };
  },
  /** 200 whose content is truncated, unparseable JSON. */
  malformed(): Reply {
    return { content: '{"phaseRelevance": 0.9,' };
  },
  /** 200 whose content is valid JSON of an unexpected shape. */
  wrongShape(): Reply {
    return { json: { unexpected: true } };
  },
};

/** What a provider's prompt cache matches on: the tools, then each message, in request order. */
export function cacheKey(body: Record<string, unknown>): string {
  const messages = Array.isArray(body['messages']) ? body['messages'] : [];
  return [JSON.stringify(body['tools'] ?? []), ...messages.map((m) => JSON.stringify(m))].join('\n');
}

function commonPrefixLength(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

function errorBody(message: string, type = 'invalid_request_error', code: string | null = null): unknown {
  return { error: { message, type, param: null, code } };
}

function defaultErrorBody(status: number): unknown {
  const message = `${STATUS_CODES[status] ?? 'Error'} (scripted)`;
  if (status === 429) return errorBody(message, 'requests', 'rate_limit_exceeded');
  return errorBody(message, status >= 500 ? 'server_error' : 'invalid_request_error');
}

function modelObject(id: string): Record<string, unknown> {
  return { id, object: 'model', created: 0, owned_by: 'scripted' };
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const contentType = typeof body === 'string' ? 'text/plain' : 'application/json';
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function flattenMessages(messages: unknown): RecordedMessage[] {
  if (!Array.isArray(messages)) return [];
  return messages.filter(isRecord).map((m) => {
    const message: RecordedMessage = {
      role: typeof m['role'] === 'string' ? m['role'] : '',
      content: flattenContent(m['content']),
    };
    if (Array.isArray(m['tool_calls'])) {
      message.toolCalls = m['tool_calls'].filter(isRecord).map((call) => {
        const fn = isRecord(call['function']) ? call['function'] : {};
        return {
          id: typeof call['id'] === 'string' ? call['id'] : '',
          name: typeof fn['name'] === 'string' ? fn['name'] : '',
          arguments: typeof fn['arguments'] === 'string' ? fn['arguments'] : '',
        };
      });
    }
    if (typeof m['tool_call_id'] === 'string') message.toolCallId = m['tool_call_id'];
    return message;
  });
}

function functionTools(tools: unknown): RecordedRequest['tools'] {
  if (!Array.isArray(tools)) return [];
  return tools.filter(isRecord).flatMap((tool) => {
    const fn = tool['function'];
    if (tool['type'] !== 'function' || !isRecord(fn) || typeof fn['name'] !== 'string') return [];
    return [
      {
        name: fn['name'],
        description: typeof fn['description'] === 'string' ? fn['description'] : '',
        parameters: isRecord(fn['parameters']) ? fn['parameters'] : {},
      },
    ];
  });
}

function flattenContent(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (isRecord(part) && typeof part['text'] === 'string' ? part['text'] : '')).join('');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
