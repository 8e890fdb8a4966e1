/**
 * A scripted OpenAI-compatible model for trying the agent loop without an API key. It answers
 * `/v1/chat/completions` for every role by looking at the request (tools offered: the agent; the
 * JSON the helper roles send: relevance, extraction, orchestration, compaction), and as the agent it
 * calls the demo conversion tool when asked to convert a Markdown file to Word, then reports the
 * tool's result. It is a demo, not a model: it understands nothing beyond that one task. A request
 * with `stream: true` (the agent step's) gets the answer as Server-Sent Events.
 *
 *   npx tsx examples/scripted-model/server.ts            # listens on 127.0.0.1:8799 (PORT to change)
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

interface Message {
  role: string;
  content?: string | null;
  tool_calls?: unknown[];
}
interface Request {
  model?: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  messages?: Message[];
  tools?: Array<{ function?: { name?: string } }>;
}

let calls = 0;

function completion(model: string, message: Record<string, unknown>, finish: string) {
  return {
    id: `chatcmpl-demo-${Date.now()}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish }],
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  };
}

/** Each helper role's system prompt names the JSON it wants; the input is JSON in the user message. */
function helperAnswer(system: string, input: Record<string, unknown>): unknown {
  if (system.includes('phaseRelevance')) return { phaseRelevance: 0.9, sessionRelevance: 0.9 };
  if (system.includes('"skills"')) {
    const candidates = (input.candidates ?? {}) as Record<string, Array<{ id: string }>>;
    return {
      skills: (candidates.skills ?? []).slice(0, 1).map((c) => c.id),
      toolsets: (candidates.toolsets ?? []).filter((c) => /^mcp-.*convert/.test(c.id)).map((c) => c.id),
      memories: [],
    };
  }
  if (system.includes('"summary"')) return { summary: JSON.stringify(input.inputs ?? []).slice(0, 300) };
  const text = JSON.stringify([input.phaseGoal, input.message]);
  return { terms: text.toLowerCase().match(/[a-z0-9]+/g) ?? [] };
}

function agentAnswer(model: string, request: Request) {
  const messages = request.messages ?? [];
  const last = messages.at(-1);
  if (last?.role === 'tool') {
    return completion(model, { content: `Done. The conversion tool answered: ${String(last.content)}` }, 'stop');
  }
  const user = [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  const offered = new Set((request.tools ?? []).map((t) => t.function?.name));
  if (offered.has('markdown_to_docx') && /word|docx/i.test(user)) {
    const inputPath = /[\w./-]+\.md\b/.exec(user)?.[0] ?? 'guide.md';
    const call = {
      id: `call_${++calls}`,
      type: 'function',
      function: { name: 'markdown_to_docx', arguments: JSON.stringify({ inputPath }) },
    };
    return completion(model, { content: null, tool_calls: [call] }, 'tool_calls');
  }
  return completion(
    model,
    { content: `(scripted demo model) I can only convert a Markdown file to Word: "${user}"` },
    'stop',
  );
}

function answer(request: Request) {
  const model = request.model ?? 'scripted';
  if ((request.tools ?? []).length > 0) return agentAnswer(model, request);
  const user = [...(request.messages ?? [])].reverse().find((m) => m.role === 'user')?.content ?? '{}';
  let input: Record<string, unknown> = {};
  try {
    input = JSON.parse(user) as Record<string, unknown>;
  } catch {
    // Not JSON: an agent request without tools.
    return completion(model, { content: `(scripted demo model) ${user}` }, 'stop');
  }
  const system = request.messages?.find((m) => m.role === 'system')?.content ?? '';
  return completion(model, { content: JSON.stringify(helperAnswer(system, input)) }, 'stop');
}

/**
 * The same answer as Server-Sent Events of `chat.completion.chunk`s, as OpenAI streams it: the role,
 * the text in pieces, each tool call as a head (index, id, name) and its arguments, the finish reason,
 * the usage when the request asked for it (`stream_options.include_usage`), then `[DONE]`.
 */
function stream(res: ServerResponse, reply: ReturnType<typeof completion>, withUsage: boolean): void {
  const choice = reply.choices[0]!;
  const message = choice.message as { content?: string | null; tool_calls?: Array<Record<string, unknown>> };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    id: reply.id,
    object: 'chat.completion.chunk',
    created: reply.created,
    model: reply.model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const chunks: unknown[] = [chunk({ role: 'assistant', content: '' })];
  const text = message.content ?? '';
  for (let at = 0; at < text.length; at += 16) chunks.push(chunk({ content: text.slice(at, at + 16) }));
  for (const [index, call] of (message.tool_calls ?? []).entries()) {
    const fn = call['function'] as { name: string; arguments: string };
    chunks.push(
      chunk({ tool_calls: [{ index, id: call['id'], type: 'function', function: { name: fn.name, arguments: '' } }] }),
    );
    chunks.push(chunk({ tool_calls: [{ index, function: { arguments: fn.arguments } }] }));
  }
  chunks.push(chunk({}, choice.finish_reason));
  if (withUsage) chunks.push({ ...chunk({}), choices: [], usage: reply.usage });
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const c of chunks) res.write(`data: ${JSON.stringify(c)}\n\n`);
  res.end('data: [DONE]\n\n');
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  void body(req).then((text) => {
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message: 'not found' } }));
      return;
    }
    const request = JSON.parse(text || '{}') as Request;
    const reply = answer(request);
    if (request.stream === true) return stream(res, reply, request.stream_options?.include_usage === true);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
  });
});
const port = Number(process.env.PORT ?? 8799);
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`scripted OpenAI-compatible model on http://127.0.0.1:${port}/v1\n`);
});
