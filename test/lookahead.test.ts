/**
 * Judging ahead (settings.relevanceLookahead) on a real server: a burst of queued inputs gets the
 * same decisions as one-at-a-time processing, across new phases, an out-of-scope request, a
 * conflict and inputs whose meaning depends on the phase in force when they are judged.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { commandSignal, decisionsQuery, goalsQuery, messageSignal, snapshotQuery } from '../contract/api.js';
import type { DecisionRecord } from '../contract/state.js';
import { MODEL, decided, message, startSession, uniqueId, userJson, waitFor } from './support/harness.js';
import { useScriptedWorker } from './support/scripted-roles.js';

const f = useScriptedWorker();

/**
 * A stateless relevance model whose answer depends on the phase goal it is given: a step of topic T
 * fits only a phase about topic T, so a judgment made against the wrong goals changes the decision.
 */
function relevance(message: string, phaseGoal: string): [number, number] {
  const topic = /topic ([A-Z])/.exec(message)?.[1];
  if (/weather/.test(message)) return [0.05, 0.05];
  if (/paid ads/.test(message)) return [0.9, 0.1];
  const inPhase = topic !== undefined && phaseGoal.includes(`topic ${topic}`);
  if (/^switch to/.test(message)) return [inPhase ? 0.9 : 0.1, 0.9];
  return [inPhase ? 0.9 : 0.5, 0.9];
}

const INPUTS = [
  'topic A: start the report',
  'topic A: step 1',
  'topic A: step 2',
  'switch to topic B',
  'topic B: step 1',
  'topic A: step 3',
  "what's the weather tomorrow",
  'topic B: step 2',
  'switch to topic C',
  'topic C: step 1',
  'topic C: use paid ads',
  ...Array.from({ length: 9 }, (_, i) => `topic C: step ${i + 2}`),
];

beforeAll(() => {
  f.server.on(MODEL.relevance, (req) => {
    const { message: text, phaseGoal } = userJson<{ message: string; phaseGoal: string }>(req);
    const [phaseRelevance, sessionRelevance] = relevance(text, phaseGoal);
    return { json: { phaseRelevance, sessionRelevance } };
  });
  for (const goal of INPUTS) f.script.selection.set(goal, { skills: [], toolsets: [] });
});

/** Sends every input at once (a backlog forms behind the first) and waits for the last decision. */
async function burst(relevanceLookahead: number): Promise<{ handle: WorkflowHandle; records: DecisionRecord[] }> {
  const handle = await startSession(f.worker, { settings: { relevanceLookahead } });
  for (const text of INPUTS) await handle.signal(messageSignal, message(text));
  await waitFor(
    () => handle.query(snapshotQuery),
    (s) => s.stage === 'Idle' && s.lastDecision?.seq === INPUTS.length,
    120_000,
  );
  return { handle, records: await handle.query(decisionsQuery) };
}

/** Relevance activities the Session scheduled, from its history. */
async function relevanceCalls(handle: WorkflowHandle): Promise<number> {
  const { events } = await handle.fetchHistory();
  return (events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'relevance')
    .length;
}

const judged = (r: DecisionRecord) => ({
  seq: r.seq,
  decision: r.decision,
  scores: r.scores,
  bands: r.bands,
  degraded: r.degraded,
});

describe('relevance judged ahead', () => {
  it('decides a backlog exactly as one input at a time does, re-judging what a new phase made stale', async () => {
    const sequential = await burst(0);
    const ahead = await burst(4);

    expect(sequential.records.map((r) => r.decision)).toEqual([
      'initialize',
      'continue',
      'continue',
      'new-phase',
      'continue',
      'uncertain',
      'out-of-scope',
      'continue',
      'new-phase',
      'continue',
      'conflict',
      ...Array.from({ length: 9 }, () => 'continue'),
    ]);
    expect(ahead.records.map(judged)).toEqual(sequential.records.map(judged));
    // The same goals, changed the same way (the times of the changes aside).
    const goalsOf = async (handle: typeof ahead.handle) => {
      const { history, ...goals } = await handle.query(goalsQuery);
      return { ...goals, history: history?.map(({ at: _at, ...change }) => change) };
    };
    expect(await goalsOf(ahead.handle)).toEqual(await goalsOf(sequential.handle));

    // One at a time: one judgment per input after the first. Ahead: the same, plus the judgments a
    // new phase made stale (at most the lookahead width per goal change) — which proves that
    // inputs were judged ahead and that the stale judgments were dropped, not used.
    const inputsJudged = INPUTS.length - 1;
    expect(await relevanceCalls(sequential.handle)).toBe(inputsJudged);
    const aheadCalls = await relevanceCalls(ahead.handle);
    expect(aheadCalls).toBeGreaterThan(inputsJudged);
    expect(aheadCalls).toBeLessThanOrEqual(inputsJudged + 2 * 4);
  });

  it('does not let a judgment made ahead that failed decide: the input is judged again at its turn', async () => {
    const goal = 'topic D: write the migration plan';
    const flaky = 'topic D: add the rollback section';
    f.script.selection.set(goal, { skills: [], toolsets: [] });
    let flakyCalls = 0;
    f.server.on(MODEL.relevance, (req) => {
      const { message: text, phaseGoal } = userJson<{ message: string; phaseGoal: string }>(req);
      // The first judgment of `flaky` fails (the one made ahead); later ones answer.
      if (text === flaky && ++flakyCalls === 1) return { status: 500, body: { error: { message: 'overloaded' } } };
      const [phaseRelevance, sessionRelevance] = relevance(text, phaseGoal);
      return { json: { phaseRelevance, sessionRelevance } };
    });
    // Paused while the inputs arrive, so the backlog is there before the first input is decided.
    const handle = await startSession(f.worker, { settings: { modelAttempts: 1 } });
    await handle.signal(commandSignal, { commandId: uniqueId('c'), name: 'pause' });
    for (const text of [goal, 'topic D: list the tables', flaky]) await handle.signal(messageSignal, message(text));
    await handle.signal(commandSignal, { commandId: uniqueId('c'), name: 'resume' });

    const record = await decided(handle, 3);
    expect(record).toMatchObject({ decision: 'continue', degraded: null, scores: { phase: 0.9, session: 0.9 } });
    expect(flakyCalls).toBe(2);
  });
});
