/**
 * The start-up model check and `harness doctor`, as real subprocesses against a scripted
 * OpenAI-compatible server on 127.0.0.1 that refuses what OpenAI's reasoning models refuse.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLoggedProcess } from './support/logged-process.js';
import { ScriptedModelServer, type RecordedRequest, type Reply } from './support/model-server.js';

/** OpenAI's error body for a refused parameter (https://platform.openai.com/docs/guides/error-codes). */
function refusal(message: string, param: string, code: string): Reply {
  return { status: 400, body: { error: { message, type: 'invalid_request_error', param, code } } };
}

/**
 * Answers like an OpenAI reasoning model (gpt-5, o-series): `max_tokens` is refused in favour of
 * `max_completion_tokens`, and any `temperature` but the default 1 is refused
 * (https://platform.openai.com/docs/guides/reasoning; the API reference marks `max_tokens` "not
 * compatible with o-series models": https://platform.openai.com/docs/api-reference/chat/create).
 * Otherwise each role gets an answer that fits what its request asked for.
 */
function reasoningModel(req: RecordedRequest): Reply {
  if ('max_tokens' in req.body) {
    return refusal(
      "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
      'max_tokens',
      'unsupported_parameter',
    );
  }
  if ('temperature' in req.body && req.body.temperature !== 1) {
    return refusal(
      `Unsupported value: 'temperature' does not support ${String(req.body.temperature)} with this model. Only the default (1) value is supported.`,
      'temperature',
      'unsupported_value',
    );
  }
  if (req.tools.length > 0) return { content: 'ok' };
  const system = req.messages[0]?.content ?? '';
  if (system.includes('"phaseRelevance"'))
    return { json: { phaseRelevance: 0.9, sessionRelevance: 0.9, terms: ['check'] } };
  if (system.includes('"skills"')) return { json: { skills: [], toolsets: [], memories: [] } };
  if (system.includes('"summary"')) return { json: { summary: 'checked' } };
  return { json: { terms: ['check'] } };
}

let server: ScriptedModelServer;

beforeAll(async () => {
  server = await ScriptedModelServer.start();
  server.on('gpt-5-mini', reasoningModel).on('house-reasoner', reasoningModel);
});
afterAll(async () => {
  await server.close();
});

function env(model: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(HARNESS_|OPENAI_)/.test(k)));
  return { ...clean, OPENAI_BASE_URL: server.baseURL, OPENAI_API_KEY: 'test', HARNESS_MODEL: model, ...extra };
}

function doctor(environment: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'doctor'], { env: environment });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

describe('harness doctor', () => {
  it('chooses the reasoning profile by the model name, and every role passes', async () => {
    const before = server.requests('gpt-5-mini').length;
    const { code, out } = await doctor(env('gpt-5-mini'));
    expect(out).toMatch(/openai-reasoning/);
    expect(out).toContain('max_completion_tokens');
    for (const role of ['relevance', 'extraction', 'orchestration', 'compaction', 'agent']) expect(out).toContain(role);
    expect(out.match(/│ ok /g)?.length).toBe(5);
    expect(code).toBe(0);
    const sent = server.requests('gpt-5-mini').slice(before);
    expect(sent).toHaveLength(5);
    for (const req of sent) {
      expect(req.body).not.toHaveProperty('max_tokens');
      expect(req.body).not.toHaveProperty('temperature');
    }
    // The agent's check is a streamed request with a tool, like every agent step.
    const agent = sent.find((r) => r.tools.length > 0);
    expect(agent?.body.stream).toBe(true);
    expect(agent?.tools.map((t) => t.name)).toEqual(['harness_check']);
  });

  it('prints the refusal and the setting that fixes it, and exits non-zero, when the endpoint refuses a parameter', async () => {
    // A name detection cannot place: the generic profile sends max_tokens, which this endpoint refuses.
    const { code, out } = await doctor(env('house-reasoner'));
    expect(out).toMatch(/generic \(detected\)/);
    expect(out).toMatch(/refused/);
    expect(out).toContain("Unsupported parameter: 'max_tokens' is not supported with this model");
    expect(out).toContain('HARNESS_PROVIDER=openai-reasoning');
    expect(out).toMatch(/5 of 5 model roles did not pass/);
    expect(code).toBe(2);
  });

  it('passes once HARNESS_PROVIDER names the profile the fix asks for', async () => {
    const { code, out } = await doctor(env('house-reasoner', { HARNESS_PROVIDER: 'openai-reasoning' }));
    expect(out).toContain('openai-reasoning');
    expect(out).toContain('(HARNESS_PROVIDER)');
    expect(code).toBe(0);
  });
});

describe('the worker start-up check', () => {
  it('stops the worker at once with a message naming the setting to change', async () => {
    const worker = startLoggedProcess(['--import', 'tsx', 'worker/main.ts'], env('house-reasoner'));
    const code = await worker.exited;
    const log = worker.lines.join('\n');
    expect(code).toBe(1);
    expect(log).toMatch(
      /provider agent: .* model house-reasoner profile generic \(detected: unknown endpoint 127\.0\.0\.1\)/,
    );
    expect(log).toContain('the worker did not start');
    expect(log).toContain('HARNESS_PROVIDER=openai-reasoning');
  });

  it('is skipped with --no-check, and the worker goes on to start', async () => {
    const worker = startLoggedProcess(
      ['--import', 'tsx', 'worker/main.ts', '--no-check'],
      // An address nothing listens on: the worker gets past the check and then fails to connect.
      env('house-reasoner', { TEMPORAL_ADDRESS: '127.0.0.1:1' }),
    );
    await worker.waitForLine(/model check: skipped/);
    const requests = server.requests('house-reasoner').length;
    worker.child.kill('SIGKILL');
    await worker.exited;
    expect(server.requests('house-reasoner').length).toBe(requests);
  });
});
