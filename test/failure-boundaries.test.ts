/**
 * Every failure boundary of the design on a real server: a failing helper model degrades the input
 * it was judging, within bounded retries, and never loses the message or wrecks state.
 */
import { describe, expect, it } from 'vitest';
import { capabilitiesQuery, goalsQuery, snapshotQuery } from '../contract/api.js';
import { setTimeout as delay } from 'node:timers/promises';
import { MemoryStore } from '../capabilities/memory-store.js';
import { MODEL, decided, scriptedModels, send, startSession, startWorker, userJson } from './support/harness.js';
import { faults } from './support/model-server.js';
import { useScriptedWorker } from './support/scripted-roles.js';

const f = useScriptedWorker();
/** Fast failure settings: two attempts of at most 1.5 s each. */
const settings = { modelTimeoutMs: 1_500, modelAttempts: 2 };

const relevanceCalls = (text: string) =>
  f.server.requests(MODEL.relevance).filter((r) => userJson<{ message: string }>(r).message === text);

/** A Session past its first input, with capabilities loaded. */
async function establishedSession(goal: string) {
  f.script.selection.set(goal, { skills: ['web-research'], toolsets: ['web-search'] });
  const handle = await startSession(f.worker, { settings });
  await send(handle, goal);
  await decided(handle, 1);
  return {
    handle,
    goals: await handle.query(goalsQuery),
    capabilities: await handle.query(capabilitiesQuery),
  };
}

describe('relevance failures degrade the input and keep state', () => {
  it.each([
    ['500s until retries run out', faults.serverError(), 2, /ModelServerError.*MAXIMUM_ATTEMPTS_REACHED/],
    [
      'a timeout on every attempt',
      faults.slow(5_000, { json: { phaseRelevance: 1, sessionRelevance: 1 } }),
      2,
      /timed out|timeout/i,
    ],
    ['malformed JSON', faults.malformed(), 1, /ModelInvalidOutput.*not JSON/],
    ['JSON of the wrong shape', faults.wrongShape(), 1, /ModelInvalidOutput.*phaseRelevance/],
    [
      'out-of-range scores',
      { json: { phaseRelevance: 1.7, sessionRelevance: 0.2 } },
      1,
      /ModelInvalidOutput.*phaseRelevance/,
    ],
    ['a 400 from the endpoint', faults.badRequest('context length exceeded'), 1, /ModelRequestRejected.*400/],
  ])('%s', async (label, reply, calls, reason) => {
    const { handle, goals, capabilities } = await establishedSession(`Research topic for ${label}`);
    const text = `follow-up for ${label}`;
    f.script.relevance.set(text, [reply]);
    const started = Date.now();
    await send(handle, text);
    const record = await decided(handle, 2);
    const elapsed = Date.now() - started;

    expect(record.decision).toBe('degraded');
    expect(record.degraded).toMatch(reason);
    expect(record.scores).toBeNull();
    expect(relevanceCalls(text)).toHaveLength(calls);
    // Bounded: two attempts of at most 1.5 s plus backoff cost seconds, not minutes.
    expect(elapsed).toBeLessThan(15_000);
    expect(await handle.query(goalsQuery)).toEqual(goals);
    expect(await handle.query(capabilitiesQuery)).toEqual(capabilities);
    // The saved message is still processed: the agent turn ran on it.
    expect(record.agent?.outcome).toBe('replied');
  });

  it('honours retry-after on a 429 and succeeds on the retry', async () => {
    const { handle } = await establishedSession('Research the rate-limited topic');
    const text = 'keep going on the rate-limited topic';
    f.script.relevance.set(text, [faults.rateLimited(2), { json: { phaseRelevance: 0.9, sessionRelevance: 0.9 } }]);
    await send(handle, text);
    const record = await decided(handle, 2);
    expect(record.decision).toBe('continue');
    const [first, second] = relevanceCalls(text);
    expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(1_900);
  });
});

describe('environment preparation failures', () => {
  it('gives up on a recall slower than its 1 s bound: the input continues with no new candidates', async () => {
    // A memory store behind a stalled network: every recall answers after 5 s, past the local
    // activity's 1 s start-to-close bound (two attempts, 2.5 s in all).
    const memories = MemoryStore.open(':memory:');
    const stalled = {
      recall: async (...args: Parameters<MemoryStore['recall']>) => {
        await delay(5_000);
        return memories.recall(...args);
      },
      text: (...args: Parameters<MemoryStore['text']>) => memories.text(...args),
    };
    const slow = await startWorker({ models: scriptedModels(f.server), memories: stalled });
    try {
      const goal = 'Summarise the on-call handbook for new engineers';
      f.script.selection.set(goal, { skills: ['web-research'], toolsets: [] });
      const handle = await startSession(slow, { settings });
      await send(handle, goal);
      const record = await decided(handle, 1);
      expect(record.decision).toBe('initialize');
      expect(record.fallbacks).toEqual([expect.stringMatching(/^recall: .*; no new candidates$/)]);
      // The recall answers after 5 s; under the old 10 s bound it would have been waited for.
      expect((await handle.query(capabilitiesQuery)).skills.map((c) => c.id)).toEqual([]);
    } finally {
      await slow.stop();
      memories.close();
    }
  });

  it('falls back to the raw task text when extraction fails, and still recalls candidates', async () => {
    const goal = 'Convert the quarterly Markdown report to Word';
    f.script.terms.set(goal, faults.serverError());
    f.script.selection.set(goal, { skills: ['markdown-to-docx'], toolsets: ['doc-convert'] });
    const handle = await startSession(f.worker, { settings });
    await send(handle, goal);
    const record = await decided(handle, 1);
    expect(record.fallbacks).toEqual([
      expect.stringMatching(/^extraction: ModelServerError.*recall used the raw task text$/),
    ]);
    const orchestration = f.server
      .requests(MODEL.orchestration)
      .find((r) => userJson<{ task: { phaseGoal: string } }>(r).task.phaseGoal === goal);
    const candidates = userJson<{ candidates: { skills: { id: string }[] } }>(orchestration!).candidates;
    expect(candidates.skills.map((c) => c.id)).toContain('markdown-to-docx');
    expect((await handle.query(capabilitiesQuery)).skills.map((c) => c.id)).toEqual(['markdown-to-docx']);
  });

  it('drops and records selected ids that are neither candidates nor current', async () => {
    const goal = 'Plan the team offsite in Porto';
    f.script.terms.set(goal, ['travel', 'offsite', 'itinerary', 'maps', 'places']);
    f.script.selection.set(goal, { skills: ['travel-planning', 'teleportation'], toolsets: ['maps', 'made-up-tools'] });
    const handle = await startSession(f.worker, { settings });
    await send(handle, goal);
    const record = await decided(handle, 1);
    expect(record.dropped).toEqual(['skill:teleportation', 'toolset:made-up-tools']);
    const caps = await handle.query(capabilitiesQuery);
    expect(caps.skills.map((c) => c.id)).toEqual(['travel-planning']);
    expect(caps.toolsets.map((c) => c.id)).toEqual(['maps']);
  });

  it('keeps the current capabilities when orchestration fails in reconcile mode', async () => {
    const { handle, capabilities } = await establishedSession('Research vector databases for the search team');
    const next = 'Now turn the research into a comparison spreadsheet';
    f.script.relevance.set(next, [0.1, 0.9]);
    f.script.selection.set(next, faults.serverError());
    await send(handle, next);
    const record = await decided(handle, 2);
    expect(record.decision).toBe('new-phase');
    expect(record.fallbacks).toEqual([expect.stringMatching(/^orchestration: ModelServerError.*capabilities kept$/)]);
    // Compaction ran beside the preparation, so the apply stage is the last entry, not the one before it.
    expect(record.stages.at(-1)).toMatchObject({
      stage: 'Applying the task environment',
      outcome: expect.stringMatching(/^skipped/),
    });
    expect(record.diff).toBeNull();
    expect(await handle.query(capabilitiesQuery)).toEqual(capabilities);
    expect(capabilities.skills.length).toBeGreaterThan(0);
    // The phase still changed: the decision is independent of the environment.
    expect((await handle.query(goalsQuery)).phase?.text).toBe(next);
  });

  it('keeps a hand-off built from the previous phase’s record when compaction fails', async () => {
    const goal = 'Draft the incident timeline for the payments outage';
    const { handle } = await establishedSession(goal);
    f.script.summary.set(goal, faults.malformed());
    const next = 'Now write the customer-facing status update';
    f.script.relevance.set(next, [0.1, 0.9]);
    f.script.selection.set(next, { skills: ['email-drafting'] });
    await send(handle, next);
    const record = await decided(handle, 2);
    expect(record.fallbacks).toEqual([
      expect.stringMatching(/^compaction: ModelInvalidOutput.*the phase keeps a hand-off built from its record$/),
    ]);
    const snapshot = await handle.query(snapshotQuery);
    expect(snapshot.phase?.previous).toEqual([
      { index: 0, goal, compaction: 'failed', summary: expect.stringContaining(`Phase goal: ${goal}`) as string },
    ]);
  });

  it('records a failed agent turn without losing the decision', async () => {
    const { handle } = await establishedSession('Write the onboarding FAQ');
    const text = 'add a question about VPN access';
    f.script.relevance.set(text, [0.9, 0.9]);
    f.script.reply.set(text, faults.badRequest('agent refused'));
    await send(handle, text);
    const record = await decided(handle, 2);
    expect(record.decision).toBe('continue');
    expect(record.agent).toMatchObject({ outcome: 'failed', reason: expect.stringContaining('ModelRequestRejected') });
  });
});
