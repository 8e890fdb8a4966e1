/**
 * Cache-friendly agent requests, on the real server with the real `openai` client: the bytes each
 * agent request sends in front of its transcript (model, tools, system message) stay the same across
 * the steps of one turn and across `continue` inputs, and the scripted server's prompt cache
 * (model-server.ts PROMPT_CACHE) then reports cached tokens, which reach the decision record and
 * `snapshot().usage`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../capabilities/memory-store.js';
import { snapshotQuery } from '../contract/api.js';
import { MODEL, decided, scriptedModels, send, startSession, startWorker, type TestWorker } from './support/harness.js';
import { PROMPT_CACHE, ScriptedModelServer, type Handler, type RecordedRequest } from './support/model-server.js';
import { scriptRoles } from './support/scripted-roles.js';

const GOAL = 'Research ComfyUI, write a Markdown guide about it and proofread the guide';
const NOTES = ['Remember that the guide targets Windows users', 'Remember that screenshots use the dark theme'];
const MORE = 'Continue with the install section';

/**
 * Knows only its request: after tool results it reports them; asked to remember something, it saves
 * that text with `memory_save` when the request offers it; otherwise it acknowledges the newest input.
 */
const agent: Handler = (req) => {
  const last = req.messages.at(-1);
  if (last?.role === 'tool') return { content: `Done. ${last.content.split('\n')[0]}` };
  const input = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  const fact = /^Remember that (.+)$/.exec(input)?.[1];
  if (fact && req.tools.some((t) => t.name === 'memory_save')) {
    return { toolCalls: [{ name: 'memory_save', arguments: { text: fact, scope: 'session' } }] };
  }
  return { content: `Noted: ${input}` };
};

/** The request body up to its transcript: everything before the first message after the system message. */
function prefixBeforeTranscript(req: RecordedRequest): string {
  const messages = req.body['messages'] as unknown[];
  const open = req.raw.indexOf('"messages":[') + '"messages":['.length;
  const system = JSON.stringify(messages[0]);
  expect(req.raw.slice(open, open + system.length)).toBe(system);
  return req.raw.slice(0, open + system.length);
}

let dir: string;
let server: ScriptedModelServer;
let memories: MemoryStore;
let worker: TestWorker;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'prompt-cache-'));
  memories = MemoryStore.open(join(dir, 'memory.db'));
  server = await ScriptedModelServer.start({ promptCache: true });
  const script = scriptRoles(server);
  server.on(MODEL.agent, agent);
  for (const text of [...NOTES, MORE]) script.relevance.set(text, [0.9, 0.9]);
  script.selection.set(GOAL, { skills: ['technical-research', 'markdown-guide', 'proofreading'], toolsets: [] });
  worker = await startWorker({ models: scriptedModels(server), memories });
});

afterAll(async () => {
  await worker?.stop();
  await server?.close();
  memories?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('agent requests keep a stable prefix', () => {
  it('sends the same bytes before the transcript at every step of continue turns, and reports cached tokens', async () => {
    const handle = await startSession(worker);
    const requestsOf: RecordedRequest[][] = [];
    const records = [];
    for (const [i, text] of [GOAL, ...NOTES, MORE].entries()) {
      const before = server.requests(MODEL.agent).length;
      await send(handle, text);
      records.push(await decided(handle, i + 1, 60_000));
      requestsOf.push(server.requests(MODEL.agent).slice(before));
    }
    expect(records.map((r) => r.decision)).toEqual(['initialize', 'continue', 'continue', 'continue']);
    // The two notes took two steps each (memory_save, then the reply); the last input one.
    expect(records.map((r) => r.agent?.steps)).toEqual([1, 2, 2, 1]);
    expect(records[1]?.agent?.toolCalls).toEqual([expect.objectContaining({ tool: 'memory_save', status: 'ok' })]);

    const continues = requestsOf.slice(1).flat();
    expect(continues).toHaveLength(5);
    const prefixes = continues.map(prefixBeforeTranscript);
    for (const prefix of prefixes) expect(prefix).toBe(prefixes[0]);
    const prefix = prefixes[0] ?? '';
    // The prefix holds the sorted tools and the loaded Skills, and is long enough for a provider to cache.
    expect(prefix).toMatch(/^\{"model":"[^"]+","tools":\[/);
    expect(continues[0]?.tools.map((t) => t.name)).toEqual([
      'capabilities_load',
      'capabilities_search',
      'capabilities_unload',
      'memory_save',
      'session_create_sub',
    ]);
    expect(prefix).toContain('## Skill: Write a Markdown Guide');
    expect(prefix.length / PROMPT_CACHE.charsPerToken).toBeGreaterThan(PROMPT_CACHE.minTokens);
    // The initialize turn differs only after its Skills and tools: in the decision note.
    const initialize = prefixBeforeTranscript(requestsOf[0]![0]!);
    let common = 0;
    while (initialize[common] === prefix[common]) common++;
    expect(prefix.slice(0, common)).toContain('Session-wide goal:');
    expect(prefix.slice(common)).toMatch(/^continue/);

    // Cached tokens: none for the first request, then the shared prefix in every continue input's record.
    expect(records[0]?.usage?.byRole['agent']?.cachedTokens).toBe(0);
    for (const record of records.slice(1)) {
      const agentUsage = record.usage?.byRole['agent'];
      expect(agentUsage?.cachedTokens).toBeGreaterThanOrEqual(PROMPT_CACHE.minTokens);
      expect(agentUsage?.cachedTokens).toBeLessThanOrEqual(agentUsage?.promptTokens ?? 0);
    }
    const view = await handle.query(snapshotQuery);
    const cachedInRecords = records.reduce((n, r) => n + (r.usage?.total.cachedTokens ?? 0), 0);
    expect(view.usage?.total.cachedTokens).toBe(cachedInRecords);
  });
});
