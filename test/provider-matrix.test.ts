/**
 * A Session on a real worker against every provider emulator, the models shaped by that provider's
 * profile: an initialize, a continue, a tool call that waits for approval and runs once when
 * approved, a new phase with hand-off (the compaction role's request accepted, the finished phase
 * compacted with the role's hand-off, the new phase's turn replied), and a sub-session made by the agent's
 * `session_create_sub` (the child's own initialize and agent turn against the same emulator, its
 * reply back in the parent, which repeats it only from its own request). Per emulator: 0 refused
 * requests, no degraded decision in parent or child, every agent turn replied.
 * (test/provider-emulators.test.ts covers each role's request shape and an agent tool loop per emulator.)
 */
import { afterAll, describe, expect, it } from 'vitest';
import { OpenAIModels } from '../models/openai-models.js';
import { resolveProfiles, type ProviderName } from '../models/provider-profiles.js';
import { ROLES } from '../models/roles.js';
import { EXTRACTION_SYSTEM, HANDOFF_SYSTEM, ORCHESTRATION_SYSTEM, UNDERSTANDING_SYSTEM } from '../models/prompts.js';
import { decided, send, startSession, startWorker, waitFor } from './support/harness.js';
import { approvalSignal, snapshotQuery } from '../contract/api.js';
import { MemoryStore } from '../capabilities/memory-store.js';
import type { Handler } from './support/model-server.js';
import { honestCompaction } from './support/honest-agent.js';
import { EMULATORS, type Emulator } from './support/provider-emulators/index.js';

const started: Emulator[] = [];
afterAll(async () => {
  await Promise.all(started.map((e) => e.close()));
});

/** Helper roles answer from their request alone: the words of its user message. */
const helpers: Handler = (req) => {
  const system = req.messages.find((m) => m.role === 'system')?.content ?? '';
  const user = req.messages.find((m) => m.role === 'user')?.content ?? '';
  const words = user.toLowerCase().match(/[a-z]{3,}/g) ?? [];
  // A message that opens a new part of the work is judged outside the phase but inside the Session.
  // The relevance request is JSON; its `message` is the input judged.
  const phase = user.includes('"message":"New part:') ? 0.05 : 0.9;
  if (system === UNDERSTANDING_SYSTEM) return { json: { phaseRelevance: phase, sessionRelevance: 0.9, terms: words } };
  if (system === EXTRACTION_SYSTEM) return { json: { terms: words } };
  if (system === ORCHESTRATION_SYSTEM) return { json: { skills: [], toolsets: [], memories: [] } };
  if (system === HANDOFF_SYSTEM) return honestCompaction(req);
  return { json: { summary: user.slice(0, 200) || '-' } };
};

/**
 * The agent: asked to remember something, saves it with `memory_save` in the user's scope (a call
 * that waits for approval), then reports the tool's result; otherwise echoes the newest user message.
 */
const agent: Handler = (req) => {
  const asked = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  const reasoning = `Read: ${asked.slice(0, 40)}`;
  const last = req.messages.at(-1);
  const session = /business agent of Session (\S+)\./.exec(req.messages[0]?.content ?? '')?.[1] ?? '';
  // Profiles that merge consecutive user messages put the parent's note and the task in one
  // message: the task is its last line either way.
  if (session.includes('.sub-'))
    return { content: `Sub-session answer to "${asked.trim().split('\n').at(-1)}"`, reasoning };
  const delegate = /^Delegate: (.+)$/.exec(asked);
  if (last?.role === 'tool' && delegate) return { content: 'Handed over to a sub-session.', reasoning };
  if (delegate && req.tools.some((t) => t.name === 'session_create_sub'))
    return { toolCalls: [{ name: 'session_create_sub', arguments: { text: delegate[1]! } }], reasoning };
  if (asked.startsWith('What did the sub-session say')) {
    const reply = req.messages.find((m) => m.role === 'user' && m.content.startsWith('[Reply from sub-session'));
    return {
      content: reply ? `The sub-session said: ${reply.content.split('\n').slice(1).join(' ')}` : 'I do not know.',
      reasoning,
    };
  }
  if (last?.role === 'tool') return { content: `Saved: ${last.content}`, reasoning };
  const remember = /^Remember that (.+)$/.exec(asked);
  if (remember && req.tools.some((t) => t.name === 'memory_save'))
    return { toolCalls: [{ name: 'memory_save', arguments: { text: remember[1]!, scope: 'user' } }], reasoning };
  return { content: `You said: ${asked}`, reasoning };
};

describe('a Session against every provider emulator', () => {
  for (const provider of Object.keys(EMULATORS) as ProviderName[]) {
    it(`${provider}: initialize, continue, an approved tool call, a new phase, a sub-session; 0 refused, nothing degraded, every turn replied`, async () => {
      const emulator = await EMULATORS[provider]!();
      started.push(emulator);
      emulator.server.on('helper-model', helpers).on('agent-model', agent);
      const models = Object.fromEntries(ROLES.map((r) => [r, r === 'agent' ? 'agent-model' : 'helper-model']));
      const memories = MemoryStore.open(':memory:');
      const worker = await startWorker({
        memories,
        models: new OpenAIModels({
          baseURL: emulator.baseURL,
          apiKey: 'test',
          models,
          profiles: resolveProfiles({ baseURL: emulator.baseURL, models, provider }),
        }),
      });
      try {
        const handle = await startSession(worker);
        await send(handle, 'Write a short note about durable workflows');
        const first = await decided(handle, 1);
        await send(handle, 'Add a line about retries');
        const second = await decided(handle, 2);
        for (const record of [first, second]) {
          expect(record.degraded).toBeNull();
          expect(record.agent).toMatchObject({ outcome: 'replied' });
        }
        expect(second.agent?.reply).toContain('Add a line about retries');

        // A tool call that waits for approval, approved, runs once.
        await send(handle, 'Remember that I prefer A4 paper', { from: { kind: 'user', id: 'user-1' } });
        const view = await waitFor(
          () => handle.query(snapshotQuery),
          (v) => v.pendingApprovals.length === 1,
        );
        await handle.signal(approvalSignal, { approvalId: view.pendingApprovals[0]!.approvalId, approved: true });
        const third = await decided(handle, 3);
        expect(third.degraded).toBeNull();
        expect(third.agent).toMatchObject({ outcome: 'replied' });
        expect(third.agent?.toolCalls).toEqual([expect.objectContaining({ tool: 'memory_save', status: 'ok' })]);
        expect(memories.count()).toBe(1);

        // A new phase with hand-off: the compaction role's request is accepted, the summary recorded.
        await send(handle, 'New part: convert the note to a slide outline');
        const fourth = await decided(handle, 4);
        expect(fourth).toMatchObject({ decision: 'new-phase', degraded: null, agent: { outcome: 'replied' } });
        const handoffs = emulator.server
          .requests('helper-model')
          .filter((r) => r.messages[0]?.content === HANDOFF_SYSTEM);
        expect(handoffs.length).toBeGreaterThanOrEqual(1);
        const [finished] = (await handle.query(snapshotQuery)).phase?.previous ?? [];
        // Compacted by the role (not the deterministic fallback), and the record says no fallback ran.
        expect(finished).toMatchObject({ compaction: 'compacted', summary: expect.stringContaining('memory_save') });
        expect(fourth.fallbacks).toEqual([]);

        // A sub-session created by the agent's session_create_sub, answering back to the parent.
        await send(handle, 'Delegate: list three uses of durable timers');
        const fifth = await decided(handle, 5);
        expect(fifth.degraded).toBeNull();
        expect(fifth.agent).toMatchObject({ outcome: 'replied' });
        const created = fifth.agent?.toolCalls?.find((c) => c.tool === 'session_create_sub');
        expect(created).toMatchObject({ status: 'ok' });
        const childId = (
          await waitFor(
            () => handle.query(snapshotQuery),
            (v) => v.children.length === 1,
          )
        ).children[0]!.sessionId;
        const child = worker.client.workflow.getHandle(`session:${childId}`);
        const childFirst = await decided(child, 1);
        expect(childFirst).toMatchObject({ decision: 'initialize', degraded: null, agent: { outcome: 'replied' } });
        const answer = 'Sub-session answer to "Delegate: list three uses of durable timers"';
        expect(childFirst.agent?.reply).toContain(answer);
        await waitFor(
          () => handle.query(snapshotQuery),
          (v) => v.children[0]?.lastReply?.text !== undefined,
        );
        await send(handle, 'What did the sub-session say?');
        const asked = await decided(handle, 6);
        expect(asked).toMatchObject({ degraded: null, agent: { outcome: 'replied' } });
        expect(asked.agent?.reply).toContain(answer);
        expect(memories.count()).toBe(1);

        expect(emulator.server.requests('helper-model').length).toBeGreaterThan(0);
        expect(emulator.server.refused().map((r) => JSON.stringify(r.reply))).toEqual([]);
        expect(emulator.server.requests('agent-model').length).toBeGreaterThanOrEqual(2);
      } finally {
        await worker.stop();
        memories.close();
      }
    });
  }
});
