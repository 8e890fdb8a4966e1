import { describe, it, expect, beforeAll, beforeEach, afterAll } from 'vitest';
import OpenAI from 'openai';
import { setTimeout as sleep } from 'node:timers/promises';
import { ScriptedModelServer, faults, type RecordedRequest } from './support/model-server.js';

let server: ScriptedModelServer;

function client(options: { timeout?: number; maxRetries?: number } = {}): OpenAI {
  return new OpenAI({ baseURL: server.baseURL, apiKey: 'test', maxRetries: 0, timeout: 5_000, ...options });
}

function ask(model: string, content = 'hello', openai = client()) {
  return openai.chat.completions.create({ model, messages: [{ role: 'user', content }] });
}

/** Awaits a promise that must reject with `type`, and returns the typed error. */
async function failure<E extends Error>(
  promise: Promise<unknown>,
  type: abstract new (...args: never[]) => E,
): Promise<E> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(type);
  return error as E;
}

beforeAll(async () => {
  server = await ScriptedModelServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

describe('ScriptedModelServer with the real openai client', () => {
  it('routes by model and returns a well-formed chat.completion with parseable JSON content', async () => {
    server.on('model-a', { json: { who: 'a', score: 0.5 } }).on('model-b', { json: { who: 'b' } });

    const a = await ask('model-a');
    const b = await ask('model-b');

    expect(a.object).toBe('chat.completion');
    expect(a.model).toBe('model-a');
    expect(a.choices[0]?.finish_reason).toBe('stop');
    expect(JSON.parse(a.choices[0]?.message.content ?? '')).toEqual({ who: 'a', score: 0.5 });
    expect(JSON.parse(b.choices[0]?.message.content ?? '')).toEqual({ who: 'b' });
    expect(a.usage?.total_tokens).toBeGreaterThan(0);
    expect(server.requests('model-a')).toHaveLength(1);
    expect(server.requests('model-b')).toHaveLength(1);
  });

  it('consumes enqueued replies in order, then falls back to the standing behaviour', async () => {
    server.on('m', { content: 'standing' }).enqueue('m', { content: 'first' }, { content: 'second' });

    const contents: Array<string | null | undefined> = [];
    for (let i = 0; i < 3; i++) contents.push((await ask('m')).choices[0]?.message.content);

    expect(contents).toEqual(['first', 'second', 'standing']);
  });

  it('gives handlers the recorded request with flattened messages and headers', async () => {
    const seen: RecordedRequest[] = [];
    server.on('echo', (req) => {
      seen.push(req);
      return { json: { lastUserMessage: req.messages.at(-1)?.content } };
    });

    const response = await client().chat.completions.create({
      model: 'echo',
      temperature: 0,
      messages: [
        { role: 'system', content: 'be terse' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'part one, ' },
            { type: 'text', text: 'part two' },
          ],
        },
      ],
    });

    expect(JSON.parse(response.choices[0]?.message.content ?? '')).toEqual({ lastUserMessage: 'part one, part two' });
    expect(seen).toHaveLength(1);
    expect(seen[0]?.messages).toEqual([
      { role: 'system', content: 'be terse' },
      { role: 'user', content: 'part one, part two' },
    ]);
    expect(seen[0]?.body['temperature']).toBe(0);
    expect(seen[0]?.headers['authorization']).toBe('Bearer test');
    expect(seen[0]?.path).toBe('/v1/chat/completions');
  });

  it('answers with tool calls and records the tools and the tool messages it was sent', async () => {
    server.enqueue('agent', {
      content: 'Converting now.',
      toolCalls: [
        { id: 'call_a', name: 'markdown_to_docx', arguments: { inputPath: 'guide.md' } },
        { name: 'noop', arguments: '{}' },
      ],
    });

    const response = await client().chat.completions.create({
      model: 'agent',
      messages: [
        { role: 'user', content: 'convert it' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'list_files', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_0', content: 'guide.md' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'markdown_to_docx',
            description: 'Convert',
            parameters: { type: 'object', properties: {} },
          },
        },
      ],
    });

    const choice = response.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    expect(choice?.message.content).toBe('Converting now.');
    const calls = (choice?.message.tool_calls ?? []).map((c) =>
      c.type === 'function' ? [c.id, c.function.name, c.function.arguments] : [],
    );
    expect(calls[0]).toEqual(['call_a', 'markdown_to_docx', '{"inputPath":"guide.md"}']);
    expect(calls[1]?.[0]).toMatch(/^call_\d+$/);
    const [recorded] = server.requests('agent');
    expect(recorded?.tools).toEqual([
      { name: 'markdown_to_docx', description: 'Convert', parameters: { type: 'object', properties: {} } },
    ]);
    expect(recorded?.messages.slice(1)).toEqual([
      { role: 'assistant', content: '', toolCalls: [{ id: 'call_0', name: 'list_files', arguments: '{}' }] },
      { role: 'tool', content: 'guide.md', toolCallId: 'call_0' },
    ]);
  });

  it('surfaces a 429 as RateLimitError with a readable retry-after header', async () => {
    server.enqueue('m', faults.rateLimited(7));

    const error = await failure(ask('m'), OpenAI.RateLimitError);

    expect(error.status).toBe(429);
    expect(error.headers.get('retry-after')).toBe('7');
    expect(error.code).toBe('rate_limit_exceeded');
    expect(server.requests('m')).toHaveLength(1); // maxRetries: 0 means no retry
  });

  it('lets the client retry through an enqueued 429 when retries are enabled', async () => {
    server.on('m', { json: { ok: true } }).enqueue('m', faults.rateLimited(0));

    const response = await ask('m', 'hello', client({ maxRetries: 1 }));

    expect(JSON.parse(response.choices[0]?.message.content ?? '')).toEqual({ ok: true });
    expect(server.requests('m')).toHaveLength(2);
  });

  it('surfaces 500 as InternalServerError and 400 as BadRequestError', async () => {
    server.enqueue('m', faults.serverError(), faults.badRequest('prompt too long'));

    const serverError = await failure(ask('m'), OpenAI.InternalServerError);
    const badRequest = await failure(ask('m'), OpenAI.BadRequestError);

    expect(serverError.status).toBe(500);
    expect(badRequest.status).toBe(400);
    expect(badRequest.message).toContain('prompt too long');
  });

  it('turns a throwing handler into a 500 carrying its message', async () => {
    server.on('m', () => {
      throw new Error('handler exploded');
    });

    const error = await failure(ask('m'), OpenAI.InternalServerError);

    expect(error.message).toContain('handler exploded');
  });

  it('answers a slow reply within the client timeout after the delay', async () => {
    server.enqueue('m', faults.slow(100, { content: 'eventually' }));

    const started = Date.now();
    const response = await ask('m');

    expect(response.choices[0]?.message.content).toBe('eventually');
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
  });

  it('times out a reply slower than the client timeout, then keeps serving', async () => {
    server.on('m', { content: 'later' }).enqueue('m', faults.slow(400, { content: 'too late' }));

    const started = Date.now();
    await failure(ask('m', 'hello', client({ timeout: 100 })), OpenAI.APIConnectionTimeoutError);
    expect(Date.now() - started).toBeLessThan(400);

    await sleep(400); // let the abandoned delayed reply fire against the closed socket
    expect((await ask('m')).choices[0]?.message.content).toBe('later');
  });

  it('surfaces a hang-up as APIConnectionError (not a timeout)', async () => {
    server.enqueue('m', { hangUp: true });

    const error = await failure(ask('m'), OpenAI.APIConnectionError);

    expect(error).not.toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
    expect(error.status).toBeUndefined();
  });

  it('delivers malformed and wrong-shape replies as 200s with that content', async () => {
    server.enqueue('m', faults.malformed(), faults.wrongShape());

    const malformed = (await ask('m')).choices[0]?.message.content ?? '';
    const wrongShape = (await ask('m')).choices[0]?.message.content ?? '';

    expect(malformed).toBe('{"phaseRelevance": 0.9,');
    expect(() => JSON.parse(malformed) as unknown).toThrow(SyntaxError);
    expect(JSON.parse(wrongShape)).toEqual({ unexpected: true });
  });

  it('answers an unscripted model with a 404 NotFoundError', async () => {
    const error = await failure(ask('ghost'), OpenAI.NotFoundError);

    expect(error.status).toBe(404);
    expect(error.code).toBe('model_not_found');
    expect(error.message).toContain("model 'ghost' is not scripted");
  });

  it('records every request, including failed ones, in arrival order', async () => {
    server.on('ok', { content: 'fine' }).enqueue('bad', faults.serverError(), { hangUp: true });

    await failure(ask('bad', 'one'), OpenAI.InternalServerError);
    await failure(ask('bad', 'two'), OpenAI.APIConnectionError);
    await ask('ok', 'three');
    await failure(ask('ghost', 'four'), OpenAI.NotFoundError);

    const all = server.requests();
    expect(all.map((r) => [r.model, r.messages[0]?.content])).toEqual([
      ['bad', 'one'],
      ['bad', 'two'],
      ['ok', 'three'],
      ['ghost', 'four'],
    ]);
    expect(server.requests('bad')).toHaveLength(2);
    const times = all.map((r) => r.receivedAt);
    expect(times).toEqual([...times].sort((x, y) => x - y));
  });

  it('lists scripted models at GET /v1/models', async () => {
    server.on('model-a', { content: 'a' }).enqueue('model-b', { content: 'b' });

    const page = await client().models.list();

    expect(page.data.map((m) => m.id).sort()).toEqual(['model-a', 'model-b']);
  });

  it('also accepts /chat/completions without the /v1 prefix, and 404s other paths', async () => {
    server.on('m', { content: 'no prefix' });
    const origin = `http://127.0.0.1:${server.port}`;
    const init = {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [] }),
    };

    const ok = await fetch(`${origin}/chat/completions`, init);
    const missing = await fetch(`${origin}/v1/embeddings`, init);

    expect(ok.status).toBe(200);
    expect(
      ((await ok.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]?.message.content,
    ).toBe('no prefix');
    expect(missing.status).toBe(404);
    expect(server.requests().map((r) => r.path)).toEqual(['/chat/completions']);
  });

  it('reset forgets handlers, queues and recorded requests', async () => {
    server.on('m', { content: 'standing' }).enqueue('m', { content: 'queued' });
    await ask('m');
    expect(server.requests()).toHaveLength(1);

    server.reset();

    expect(server.requests()).toHaveLength(0);
    await failure(ask('m'), OpenAI.NotFoundError);
  });

  it('close() does not wait for in-flight delayed replies or keep-alive sockets', async () => {
    const other = await ScriptedModelServer.start();
    other.on('m', { content: 'warm' }).enqueue('m', { content: 'first' }, faults.slow(10_000, { content: 'never' }));
    const openai = new OpenAI({ baseURL: other.baseURL, apiKey: 'test', maxRetries: 0, timeout: 20_000 });
    await openai.chat.completions.create({ model: 'm', messages: [] }); // leaves a keep-alive socket open

    const pending = failure(openai.chat.completions.create({ model: 'm', messages: [] }), OpenAI.APIConnectionError);
    while (other.requests().length < 2) await sleep(5);
    const started = Date.now();
    await other.close();

    expect(Date.now() - started).toBeLessThan(1_000);
    await pending;
  });
});

describe('ScriptedModelServer streaming (stream: true)', () => {
  /** The raw `data:` payloads of a streamed answer, each with the time it arrived. */
  async function rawStream(body: Record<string, unknown>): Promise<Array<{ data: string; at: number }>> {
    const response = await fetch(`${server.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], stream: true, ...body }),
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const out: Array<{ data: string; at: number }> = [];
    let buffered = '';
    const decoder = new TextDecoder();
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffered += decoder.decode(chunk, { stream: true });
      const messages = buffered.split('\n\n');
      buffered = messages.pop() ?? '';
      for (const message of messages) out.push({ data: message.replace(/^data: /, ''), at: Date.now() });
    }
    return out;
  }

  it('sends chat.completion.chunk events a delay apart, a usage chunk when asked, then [DONE]', async () => {
    server.on('streamer', { content: 'Hello, streaming world', usage: { prompt: 11, completion: 5 } });
    server.streamWith({ chunkChars: 5, delayMs: 40 });
    const events = await rawStream({ model: 'streamer', stream_options: { include_usage: true } });
    server.streamWith({ chunkChars: 8, delayMs: 0 });
    expect(events.at(-1)?.data).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data) as OpenAI.ChatCompletionChunk);
    expect(new Set(chunks.map((c) => c.object))).toEqual(new Set(['chat.completion.chunk']));
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe('Hello, streaming world');
    expect(chunks.filter((c) => c.choices[0]?.delta.content).map((c) => c.choices[0]?.delta.content)).toEqual([
      'Hello',
      ', str',
      'eamin',
      'g wor',
      'ld',
    ]);
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe('stop');
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 11, completion_tokens: 5 } });
    // Really paced: the first piece arrived well before the last (8 chunks, 40 ms apart).
    expect(events.at(-1)!.at - events[0]!.at).toBeGreaterThanOrEqual(200);
  });

  it('streams tool calls as deltas that the openai client accumulates into the same message', async () => {
    server.on('caller', {
      content: 'Let me look.',
      toolCalls: [
        { id: 'call_a', name: 'search', arguments: { query: 'comfyui nodes' } },
        { id: 'call_b', name: 'fetch', arguments: '{"url":"https://example.org"}' },
      ],
    });
    const pieces: string[] = [];
    const stream = client().chat.completions.stream({
      model: 'caller',
      messages: [{ role: 'user', content: 'find it' }],
      stream_options: { include_usage: true },
    });
    stream.on('content', (piece) => pieces.push(piece));
    const completion = await stream.finalChatCompletion();
    const message = completion.choices[0]?.message;
    expect(pieces.join('')).toBe('Let me look.');
    expect(completion.choices[0]?.finish_reason).toBe('tool_calls');
    expect(
      message?.tool_calls?.map((c) => (c.type === 'function' ? [c.id, c.function.name, c.function.arguments] : [])),
    ).toEqual([
      ['call_a', 'search', '{"query":"comfyui nodes"}'],
      ['call_b', 'fetch', '{"url":"https://example.org"}'],
    ]);
    expect(completion.usage?.completion_tokens).toBeGreaterThan(0);
    // Without include_usage the stream carries no usage, as OpenAI's does.
    const bare = await client()
      .chat.completions.stream({ model: 'caller', messages: [{ role: 'user', content: 'again' }] })
      .finalChatCompletion();
    expect(bare.usage).toBeUndefined();
  });
});
