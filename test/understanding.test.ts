/**
 * Fewer model round trips in front of the agent, on the real server with the real openai client
 * against the scripted model server:
 * - combined understanding (the default): one relevance call also extracts the message's task terms;
 *   a new phase recalls with them and makes no extraction call, a continue input leaves them unused;
 * - `separate`: relevance and extraction are two calls, as before;
 * - the previous phase's compaction runs beside the new phase's orchestration, and the new phase's
 *   agent still gets its hand-off.
 */
import { describe, expect, it } from 'vitest';
import { AGENT_DECISION_NOTES } from '../models/agent-request.js';
import { DEFAULT_RECALL } from '../capabilities/catalog.js';
import { capabilitiesQuery } from '../contract/api.js';
import { STAGE, type DecisionRecord } from '../contract/state.js';
import { RELEVANCE_SYSTEM } from '../models/prompts.js';
import {
  MODEL,
  catalog,
  decided,
  scriptedModels,
  send,
  startSession,
  startWorker,
  userJson,
} from './support/harness.js';
import type { RecordedRequest } from './support/model-server.js';
import { asksForTerms, useScriptedWorker } from './support/scripted-roles.js';

const GUIDE = 'Research ComfyUI and deliver a complete Markdown guide';
const MORE = 'Add a section on custom nodes to the guide';
const WORD = 'Now make it a document my manager can open in Microsoft Word';
/** What the combined call answers for WORD: read from the message and the goals in its request. */
const WORD_TERMS = ['word', 'docx', 'convert', 'markdown'];
/** How long the scripted orchestration and compaction models hold their replies on the new phase. */
const HOLD_MS = 1_500;
const HANDOFF = 'The ComfyUI guide is written in Markdown, with a section on custom nodes.';

const fixture = useScriptedWorker();

/** Requests of `model` whose user JSON mentions `text` (this Session's, whatever ran beside it). */
function requestsAbout(model: string, text: string): RecordedRequest[] {
  return fixture.server.requests(model).filter((r) => JSON.stringify(userJson(r)).includes(text));
}

const stagesOf = (record: DecisionRecord) => record.stages.map((s) => [s.stage, s.outcome]);

/** Scripts the three inputs under goals unique to `tag`, so the two workers' Sessions never share a script. */
function scriptSession(tag: string) {
  const goal = `${GUIDE} (${tag})`;
  const more = `${MORE} (${tag})`;
  const word = `${WORD} (${tag})`;
  const { script } = fixture;
  script.relevance.set(more, [0.9, 0.9]);
  script.relevance.set(word, [0.2, 0.85]);
  script.terms.set(word, WORD_TERMS);
  script.selection.set(goal, { skills: ['markdown-guide'] });
  script.selection.set(word, {
    delayMs: HOLD_MS,
    then: { json: { skills: ['markdown-to-docx'], toolsets: ['doc-convert'] } },
  });
  // The hand-off is read from the request: its phase goal and the two inputs it holds.
  script.summary.set(goal, { delayMs: HOLD_MS, then: { json: { summary: HANDOFF } } });
  return { goal, more, word };
}

/** Runs the three inputs (initialize, continue, new phase) and returns their records. */
async function threeInputs(worker: typeof fixture.worker, tag: string) {
  const texts = scriptSession(tag);
  const handle = await startSession(worker);
  await send(handle, texts.goal);
  const first = await decided(handle, 1);
  await send(handle, texts.more);
  const second = await decided(handle, 2);
  await send(handle, texts.word);
  const third = await decided(handle, 3, 60_000);
  return { handle, texts, first, second, third };
}

describe('combined understanding (the default for model providers)', () => {
  it('judges relevance and extracts terms in one call; a new phase recalls with them, a continue leaves them', async () => {
    const { handle, texts, first, second, third } = await threeInputs(fixture.worker, 'combined');
    expect([first.decision, second.decision, third.decision]).toEqual(['initialize', 'continue', 'new-phase']);

    // (b) The continue input's one relevance call asked for terms too, and nothing used them.
    const moreJudged = requestsAbout(MODEL.relevance, texts.more);
    expect(moreJudged).toHaveLength(1);
    expect(asksForTerms(moreJudged[0]!)).toBe(true);
    expect(requestsAbout(MODEL.extraction, texts.more)).toEqual([]);
    expect(second.stages.map((s) => s.stage)).toEqual([STAGE.understand]);
    expect(second.diff).toBeNull();

    // (a) The new phase: one combined call, no extraction call, and the extract stage says why.
    const wordJudged = requestsAbout(MODEL.relevance, texts.word);
    expect(wordJudged).toHaveLength(1);
    expect(asksForTerms(wordJudged[0]!)).toBe(true);
    expect(requestsAbout(MODEL.extraction, texts.word)).toEqual([]);
    // The initialize input (no relevance call) still extracted its terms in their own call.
    expect(requestsAbout(MODEL.extraction, texts.goal)).toHaveLength(1);
    expect(stagesOf(third)).toEqual([
      [STAGE.understand, 'ok'],
      [STAGE.compact, 'ok'],
      [STAGE.extract, 'terms from the relevance call'],
      [STAGE.discover, 'ok'],
      [STAGE.orchestrate, 'ok'],
      [STAGE.apply, 'ok'],
    ]);
    // Its usage is counted under relevance: one call, and none under extraction.
    expect(third.usage?.byRole.relevance?.calls).toBe(1);
    expect(third.usage?.byRole.extraction).toBeUndefined();

    // Recall searched those terms, not the raw text: the orchestrator was offered exactly their candidates.
    const [orchestration] = requestsAbout(MODEL.orchestration, texts.word);
    const offered = userJson<{ candidates: Record<'skills' | 'toolsets', Array<{ id: string }>> }>(orchestration!);
    const ids = (found: { skills: Array<{ id: string }>; toolsets: Array<{ id: string }> }) => ({
      skills: found.skills.map((c) => c.id),
      toolsets: found.toolsets.map((c) => c.id),
    });
    const byTerms = ids(catalog().recall(WORD_TERMS.join(' '), DEFAULT_RECALL));
    expect(ids(offered.candidates)).toEqual(byTerms);
    expect(ids(catalog().recall(texts.word, DEFAULT_RECALL))).not.toEqual(byTerms);
    expect((await handle.query(capabilitiesQuery)).skills.map((c) => c.id)).toEqual(['markdown-to-docx']);

    // (d) Compaction ran beside orchestration: its request arrived before the orchestration reply left.
    const [compaction] = requestsAbout(MODEL.compaction, texts.goal);
    expect(compaction).toBeDefined();
    expect(compaction!.receivedAt).toBeLessThan(orchestration!.receivedAt + HOLD_MS);
    const stage = (name: string) => third.stages.find((s) => s.stage === name)!;
    expect(stage(STAGE.compact).startedAt).toBeLessThan(stage(STAGE.orchestrate).endedAt);
    expect(stage(STAGE.orchestrate).startedAt).toBeLessThan(stage(STAGE.compact).endedAt);
    // ...and the new phase's agent still waited for the hand-off: its first request carries it.
    // Its first step, not the speculative one sent beside the relevance call (which says `continue`
    // and was discarded): the first request for the message that says a new phase began.
    const agent = fixture.server
      .requests(MODEL.agent)
      .find(
        (r) =>
          r.messages.some((m) => m.role === 'user' && m.content.startsWith(texts.word)) &&
          r.messages.some((m) => m.role === 'system' && m.content.includes(AGENT_DECISION_NOTES['new-phase'])),
      );
    const system = agent?.messages.find((m) => m.role === 'system')?.content ?? '';
    expect(system).toContain('Earlier phases of this Session');
    expect(system).toContain(HANDOFF);
    expect(agent!.receivedAt).toBeGreaterThan(compaction!.receivedAt + HOLD_MS);
  });

  it('falls back to the extraction call when a new phase comes with no terms', async () => {
    const goal = 'Plan the team offsite (no terms)';
    const next = 'Book a venue for the offsite (no terms)';
    fixture.script.selection.set(goal, { skills: ['task-planning'] });
    fixture.script.selection.set(next, { skills: ['calendar-scheduling'] });
    fixture.script.relevance.set(next, [0.2, 0.9]);
    fixture.script.terms.set(next, []);
    const handle = await startSession(fixture.worker);
    await send(handle, goal);
    await decided(handle, 1);
    await send(handle, next);
    const record = await decided(handle, 2);
    expect(record.decision).toBe('new-phase');
    expect(requestsAbout(MODEL.relevance, next).map(asksForTerms)).toEqual([true]);
    expect(requestsAbout(MODEL.extraction, next)).toHaveLength(1);
    expect(stagesOf(record).find(([name]) => name === STAGE.extract)).toEqual([STAGE.extract, 'ok']);
  });
});

describe('separate understanding (HARNESS_UNDERSTANDING=separate)', () => {
  it('(c) judges relevance alone and extracts the new phase terms in a second call', async () => {
    const worker = await startWorker({ models: scriptedModels(fixture.server), understanding: 'separate' });
    try {
      const { texts, second, third } = await threeInputs(worker, 'separate');
      expect([second.decision, third.decision]).toEqual(['continue', 'new-phase']);
      const judged = requestsAbout(MODEL.relevance, texts.word);
      expect(judged).toHaveLength(1);
      expect(judged[0]?.messages[0]?.content).toBe(RELEVANCE_SYSTEM);
      const extracted = requestsAbout(MODEL.extraction, texts.word);
      expect(extracted).toHaveLength(1);
      expect(userJson<{ phaseGoal: string }>(extracted[0]!).phaseGoal).toBe(texts.word);
      expect(stagesOf(third).find(([name]) => name === STAGE.extract)).toEqual([STAGE.extract, 'ok']);
      expect(third.usage?.byRole.extraction?.calls).toBe(1);
      // Compaction runs beside orchestration whichever way terms are found.
      const [compaction] = requestsAbout(MODEL.compaction, texts.goal);
      const [orchestration] = requestsAbout(MODEL.orchestration, texts.word);
      expect(compaction!.receivedAt).toBeLessThan(orchestration!.receivedAt + HOLD_MS);
    } finally {
      await worker.stop();
    }
  });
});
