/**
 * The task-control loop end to end on a real Temporal server: the decision table, environment
 * preparation by difference, the source article's Session, and the stage timeline.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  approvalSignal,
  capabilitiesQuery,
  commandSignal,
  decisionsQuery,
  goalsQuery,
  historyQuery,
  notificationSignal,
  outOfScopeQuery,
  snapshotQuery,
  toolResultSignal,
} from '../contract/api.js';
import { SessionStageKey } from '../contract/search-attributes.js';
import type { DecisionRecord } from '../contract/state.js';
import { MODEL, decided, send, startSession, uniqueId, userJson, waitFor } from './support/harness.js';
import { useScriptedWorker } from './support/scripted-roles.js';

const f = useScriptedWorker();

const ids = (caps: { id: string }[]) => caps.map((c) => c.id);
const stageNames = (record: DecisionRecord) => record.stages.map((s) => s.stage);
const ALL_STAGES = [
  'Understanding the task meaning',
  'Extracting task terms',
  'Discovering task capabilities',
  'Orchestrating the task',
  'Applying the task environment',
];

describe("the source article's Session", () => {
  const GUIDE = 'Research ComfyUI and deliver a Markdown guide';
  const WORD = 'Convert the Markdown we just created to Word';
  const WEATHER = "Also check tomorrow's weather";

  it('initializes, continues, enters a new phase with a capability diff, and preserves an out-of-scope request', async () => {
    f.script.terms.set(GUIDE, ['comfyui', 'research', 'markdown', 'guide']);
    f.script.selection.set(GUIDE, {
      skills: ['technical-research', 'markdown-guide'],
      toolsets: ['web-search'],
      memories: [],
    });
    f.script.relevance.set('Continue', [0.92, 0.95]);
    f.script.relevance.set(WORD, [0.12, 0.9]);
    f.script.terms.set(WORD, ['convert', 'markdown', 'word', 'docx']);
    f.script.selection.set(WORD, {
      skills: ['markdown-guide', 'markdown-to-docx'],
      toolsets: ['doc-convert'],
      memories: [],
    });
    f.script.relevance.set(WEATHER, [0.05, 0.04]);
    const handle = await startSession(f.worker);

    // 1. initialize: both goals from the input, environment prepared in init mode.
    await send(handle, GUIDE);
    const init = await decided(handle, 1);
    expect(init.decision).toBe('initialize');
    expect(stageNames(init)).toEqual(ALL_STAGES);
    expect(init.stages.every((s) => s.outcome === 'ok')).toBe(true);
    expect(init.diff).toEqual({
      added: ['skill:technical-research', 'skill:markdown-guide', 'toolset:web-search'],
      removed: [],
      kept: [],
    });
    const goals1 = await handle.query(goalsQuery);
    expect(goals1.session).toMatchObject({ text: GUIDE, setAtSeq: 1 });
    expect(goals1.phase).toMatchObject({ text: GUIDE, setAtSeq: 1 });
    const caps1 = await handle.query(capabilitiesQuery);
    expect(ids(caps1.skills)).toEqual(['technical-research', 'markdown-guide']);
    expect(caps1.skills[0]?.source).toBe('catalog/skills/technical-research/SKILL.md');
    expect(ids(caps1.toolsets)).toEqual(['web-search']);
    const initOrchestration = f.server
      .requests(MODEL.orchestration)
      .map((r) => userJson(r))
      .find((r) => (r.task as { phaseGoal: string }).phaseGoal === GUIDE);
    expect(initOrchestration?.mode).toBe('init');
    expect(JSON.stringify(initOrchestration)).not.toContain('"terms"');

    // 2. continue: goals and capabilities untouched; only the first stage runs.
    await send(handle, 'Continue');
    const cont = await decided(handle, 2);
    expect(cont.decision).toBe('continue');
    expect(cont.scores).toEqual({ phase: 0.92, session: 0.95 });
    expect(stageNames(cont)).toEqual(['Understanding the task meaning']);
    expect(await handle.query(goalsQuery)).toEqual(goals1);
    expect(await handle.query(capabilitiesQuery)).toEqual(caps1);

    // 3. new phase: the phase goal changes, the session goal stays, capabilities change by difference.
    await send(handle, WORD);
    const phase = await decided(handle, 3);
    expect(phase.decision).toBe('new-phase');
    // The previous phase is compacted beside the environment's preparation; its entry is made when it starts.
    const [understood, ...preparing] = ALL_STAGES;
    expect(stageNames(phase)).toEqual([understood, 'Compacting the previous phase', ...preparing]);
    expect(phase.diff).toEqual({
      added: ['skill:markdown-to-docx', 'toolset:doc-convert'],
      removed: ['skill:technical-research', 'toolset:web-search'],
      kept: ['skill:markdown-guide'],
    });
    const goals3 = await handle.query(goalsQuery);
    expect(goals3.session).toEqual(goals1.session);
    expect(goals3.phase).toMatchObject({ text: WORD, setAtSeq: 3 });
    const caps3 = await handle.query(capabilitiesQuery);
    expect(ids(caps3.skills)).toEqual(['markdown-guide', 'markdown-to-docx']);
    expect(caps3.revision).toBe(caps1.revision + 1);
    const reconcile = f.server
      .requests(MODEL.orchestration)
      .map((r) => userJson(r))
      .find((r) => (r.task as { phaseGoal: string }).phaseGoal === WORD);
    expect(reconcile?.mode).toBe('reconcile');
    expect(ids((reconcile?.current as { skills: { id: string }[] }).skills)).toEqual([
      'technical-research',
      'markdown-guide',
    ]);
    const snapshot = await handle.query(snapshotQuery);
    expect(snapshot.phase?.previous).toEqual([
      // The hand-off quotes the phase goal from the record, then the compaction model's summary.
      {
        index: 0,
        goal: GUIDE,
        compaction: 'compacted',
        summary: `Phase goal: ${GUIDE}\nSummary: Summary of: ${GUIDE}`,
      },
    ]);
    // The compaction summary is stored with the phase, never in the goals.
    expect(JSON.stringify(goals3)).not.toContain('Summary of');

    // 4. out of scope: goals and capabilities untouched, the request preserved for routing.
    const weather = await send(handle, WEATHER);
    const oos = await decided(handle, 4);
    expect(oos.decision).toBe('out-of-scope');
    expect(oos.agent).toMatchObject({ outcome: 'skipped', reason: expect.stringContaining('routed to') });
    expect(await handle.query(goalsQuery)).toEqual(goals3);
    expect(await handle.query(capabilitiesQuery)).toEqual(caps3);
    // Preserved verbatim and handed to a new sub-session (test/sub-sessions.test.ts covers routing).
    expect(await handle.query(outOfScopeQuery)).toEqual([
      expect.objectContaining({ seq: 4, messageId: weather.messageId, text: WEATHER, status: 'routed' }),
    ]);
    expect(oos.route).toMatchObject({ via: 'new-sub', to: expect.stringContaining('.sub-') });
    // Scores are signals, not facts: they never reach goals.
    expect(JSON.stringify(await handle.query(goalsQuery))).not.toContain('0.05');
  });
});

describe('the decision table, end to end', () => {
  const GOAL = 'Prepare the Q3 churn analysis for the board';
  const rows: Array<{ text: string; scores: [number, number]; decision: string }> = [
    { text: 'use cohorts by signup month', scores: [0.9, 0.9], decision: 'continue' },
    { text: 'add the paid ads budget even though the board forbade it', scores: [0.8, 0.1], decision: 'conflict' },
    { text: 'what about the other one?', scores: [0.5, 0.9], decision: 'uncertain' },
    { text: 'hmm maybe', scores: [0.9, 0.5], decision: 'uncertain' },
    { text: 'book me a flight to Lisbon', scores: [0.1, 0.1], decision: 'out-of-scope' },
    { text: 'now draft the board slides from the analysis', scores: [0.2, 0.8], decision: 'new-phase' },
  ];

  it('maps every band combination to its decision and behaviour', async () => {
    f.script.selection.set(GOAL, { skills: ['spreadsheet-analysis'], toolsets: ['spreadsheet'] });
    f.script.selection.set('now draft the board slides from the analysis', {
      skills: ['presentation-slides'],
      toolsets: ['spreadsheet'],
    });
    for (const row of rows) f.script.relevance.set(row.text, row.scores);
    const handle = await startSession(f.worker);
    await send(handle, GOAL);
    await decided(handle, 1);
    const goals = await handle.query(goalsQuery);
    const caps = await handle.query(capabilitiesQuery);

    let seq = 1;
    for (const row of rows) {
      await send(handle, row.text);
      const record = await decided(handle, ++seq);
      expect({ text: row.text, decision: record.decision }).toEqual({ text: row.text, decision: row.decision });
      expect(record.scores).toEqual({ phase: row.scores[0], session: row.scores[1] });
      if (row.decision !== 'new-phase') {
        expect(await handle.query(goalsQuery)).toEqual(goals);
        expect(await handle.query(capabilitiesQuery)).toEqual(caps);
        const extra = row.decision === 'out-of-scope' ? ['Routing the request'] : [];
        expect(stageNames(record)).toEqual(['Understanding the task meaning', ...extra]);
      }
    }
    const final = await handle.query(goalsQuery);
    expect(final.session?.text).toBe(GOAL);
    expect(final.phase?.text).toBe('now draft the board slides from the analysis');
    const counts = (await handle.query(snapshotQuery)).counts.byDecision;
    expect(counts).toEqual({
      initialize: 1,
      continue: 1,
      conflict: 1,
      uncertain: 2,
      'out-of-scope': 1,
      'new-phase': 1,
    });
  });

  it('tells the agent to reason or ask on uncertain and conflict, and stores its reply', async () => {
    const goal = 'Write the release notes for version 2.4';
    f.script.selection.set(goal, { skills: ['markdown-guide'], toolsets: ['workspace-files'] });
    f.script.relevance.set('and the thing from before?', [0.5, 0.5]);
    f.script.reply.set('and the thing from before?', 'Do you mean the migration notes from 2.3?');
    const handle = await startSession(f.worker);
    await send(handle, goal);
    await decided(handle, 1);
    await send(handle, 'and the thing from before?');
    const record = await decided(handle, 2);
    expect(record.decision).toBe('uncertain');
    expect(record.agent?.outcome).toBe('replied');
    const history = await handle.query(historyQuery);
    expect(history.at(-1)).toMatchObject({
      seq: 2,
      decision: 'uncertain',
      reply: 'Do you mean the migration notes from 2.3?',
    });
    // The last request with it: a speculative first step, sent as if the verdict were `continue`
    // before it was known, may come first and is discarded (workflows/agent/speculation.ts).
    const agentRequest = f.server
      .requests(MODEL.agent)
      .filter((r) => r.messages.some((m) => m.content === 'and the thing from before?'))
      .at(-1);
    const system = agentRequest?.messages.find((m) => m.role === 'system')?.content ?? '';
    expect(system).toContain('ask the user');
    expect(system).toContain(`Session-wide goal: ${goal}`);
    // The loaded skill's instructions and the loaded tools reach the agent.
    expect(system).toContain('## Skill: Write a Markdown Guide / Tutorial (markdown-guide)');
    const body = readFileSync('catalog/skills/markdown-guide/SKILL.md', 'utf8').split('---').slice(2).join('---');
    expect(system).toContain(body.trim().split('\n').at(-1));
    // Loaded tools go as OpenAI tools with their JSON Schemas, beside the built-in tools.
    const tools = agentRequest?.tools.map((t) => t.name) ?? [];
    expect(tools).toEqual(expect.arrayContaining(['write_file', 'read_file', 'session_create_sub', 'memory_save']));
  });
});

describe('back-to-back inputs', () => {
  it('judges each input against the goals committed by the previous one', async () => {
    const goal = 'Audit the staging Kubernetes cluster for cost';
    const next = 'Now write the cost-reduction proposal';
    const third = 'Make the proposal shorter';
    f.script.selection.set(goal, { skills: ['task-planning'] });
    f.script.selection.set(next, { skills: ['weekly-report'] });
    f.script.relevance.set(next, [0.1, 0.9]);
    f.script.relevance.set(third, [0.9, 0.9]);
    const handle = await startSession(f.worker);
    // Signalled without waiting: all three are queued before the first is judged.
    await Promise.all([send(handle, goal)]);
    await send(handle, next);
    await send(handle, third);
    const record = await decided(handle, 3);
    expect(record.decision).toBe('continue');
    const judged = f.server
      .requests(MODEL.relevance)
      .map((r) => userJson<{ message: string; phaseGoal: string; sessionGoal: string }>(r));
    expect(judged.find((r) => r.message === next)).toMatchObject({ phaseGoal: goal, sessionGoal: goal });
    // With a backlog, `third` may also have been judged ahead against the first goals; the new phase
    // made that judgment stale, so the one the decision used is the last, against the new phase.
    expect(judged.filter((r) => r.message === third).at(-1)).toMatchObject({ phaseGoal: next, sessionGoal: goal });
  });
});

describe('what the relevance role sees', () => {
  it('gets only the message, its resource references and the two goals', async () => {
    const goal = 'Summarise the incident reports of last week';
    const text = 'Include the database outage too';
    f.script.selection.set(goal, { skills: ['incident-postmortem'] });
    f.script.relevance.set(text, [0.9, 0.9]);
    const handle = await startSession(f.worker);
    await send(handle, goal);
    await decided(handle, 1);
    await send(handle, text, { resources: [{ uri: 'file:///reports/db-outage.md', title: 'DB outage' }] });
    await decided(handle, 2);
    const request = f.server.requests(MODEL.relevance).find((r) => userJson<{ message: string }>(r).message === text);
    expect(request).toBeDefined();
    expect(userJson(request!)).toEqual({
      sessionGoal: goal,
      phaseGoal: goal,
      message: text,
      resources: [{ uri: 'file:///reports/db-outage.md', title: 'DB outage' }],
    });
    // Nothing of history, candidates, memory or capabilities.
    const everything = JSON.stringify(request!.messages);
    expect(everything).not.toContain('incident-postmortem');
    expect(everything).not.toContain('candidates');
  });
});

describe('paths that bypass relevance', () => {
  it('never sends approvals, tool results, notifications or commands to the relevance role', async () => {
    const goal = 'Reconcile the March invoices';
    f.script.selection.set(goal, { skills: ['spreadsheet-analysis'] });
    const handle = await startSession(f.worker);
    await send(handle, goal);
    await decided(handle, 1);
    const before = f.server.requests(MODEL.relevance).length;

    await handle.signal(approvalSignal, { approvalId: 'ap-1', approved: true, note: 'ok to send' });
    await handle.signal(toolResultSignal, { callId: 'call-1', output: { rows: 3 } });
    await handle.signal(notificationSignal, { notificationId: 'n-1', kind: 'system', text: 'maintenance at 22:00' });
    await handle.signal(commandSignal, {
      commandId: 'c-1',
      name: 'set-goals',
      args: { phase: 'Flag duplicate invoices' },
    });
    await handle.signal(commandSignal, {
      commandId: 'c-1',
      name: 'set-goals',
      args: { phase: 'Flag duplicate invoices' },
    });
    await handle.signal(commandSignal, { commandId: 'c-2', name: 'explode' });

    const snapshot = await waitFor(
      () => handle.query(snapshotQuery),
      (s) => s.counts.controlEvents === 4 && s.counts.rejected === 3,
    );
    expect(snapshot.seq.lastAccepted).toBe(1);
    // No turn waits for them, so the approval and the tool result are recorded rejections.
    expect(snapshot.counts.rejectedBy).toEqual({ 'unknown-id': 2, invalid: 1 });
    expect(snapshot.recentRejections.map((r) => r.messageId)).toEqual(['ap-1', 'call-1', null]);
    expect(snapshot.recentRejections.at(-1)?.reason).toContain('set-goals, pause, resume, close, interrupt');
    expect((await handle.query(goalsQuery)).phase?.text).toBe('Flag duplicate invoices');
    expect((await handle.query(goalsQuery)).session?.text).toBe(goal);
    expect(f.server.requests(MODEL.relevance).length).toBe(before);
    expect(await handle.query(decisionsQuery)).toHaveLength(1);
  });
});

describe('observability', () => {
  it('exposes the stage through the SessionStage search attribute and the current details', async () => {
    const goal = 'Translate the onboarding guide into Chinese';
    f.script.selection.set(goal, { skills: ['translation'], toolsets: ['translator'] });
    const handle = await startSession(f.worker);
    await send(handle, goal);
    await decided(handle, 1);
    const description = await waitFor(
      () => handle.describe(),
      (d) => d.typedSearchAttributes.get(SessionStageKey) === 'Idle',
    );
    expect(description.typedSearchAttributes.get(SessionStageKey)).toBe('Idle');
    const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails).toContain(`**Session goal:** ${goal}`);
    expect(metadata.currentDetails).toContain('Translation');
    // Activity summaries name the stage in the Web UI.
    const history = await handle.fetchHistory();
    const summaries = (history.events ?? []).flatMap((e) =>
      e.activityTaskScheduledEventAttributes && e.userMetadata?.summary?.data
        ? [Buffer.from(e.userMetadata.summary.data).toString()]
        : [],
    );
    expect(summaries).toEqual(
      expect.arrayContaining([
        expect.stringContaining('Extracting task terms'),
        expect.stringContaining('Orchestrating the task'),
      ]),
    );
  });

  it('changes search attributes only when status or goal change, never per input', async () => {
    const goal = 'Summarise the quarterly churn analysis';
    f.script.selection.set(goal, { skills: [], toolsets: [] });
    const handle = await startSession(f.worker);
    await send(handle, goal);
    await decided(handle, 1);
    // Our upserts; the SDK's own TemporalChangeVersion upserts (one per patch, per run) are not counted.
    const upserts = async () =>
      ((await handle.fetchHistory()).events ?? []).filter((e) =>
        Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}).some((k) =>
          k.startsWith('Session'),
        ),
      ).length;
    const before = await upserts();
    for (let seq = 2; seq <= 6; seq++) {
      const text = `continue with part ${seq}`;
      f.script.relevance.set(text, [0.9, 0.9]);
      await send(handle, text);
      await decided(handle, seq);
    }
    // Five continue inputs: no search-attribute upsert (each would be a history event and a billable action).
    expect(await upserts()).toBe(before);
    await handle.signal(commandSignal, { commandId: uniqueId('c'), name: 'pause' });
    await waitFor(
      () => handle.describe(),
      (d) => d.typedSearchAttributes.get(SessionStageKey) === 'Paused',
    );
    expect(await upserts()).toBe(before + 1);
  });
});
