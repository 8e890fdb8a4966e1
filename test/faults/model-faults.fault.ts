/**
 * Model faults: every role × (429 with retry-after, 500, a hang past the timeout, connection refused,
 * malformed output, the wrong shape, out-of-range values where a role has a range). Whatever the
 * model does, each input gets exactly one decision record, the failure is recorded (degraded, a
 * fallback, a failed agent turn or dropped ids), and no workflow task fails.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { beforeAll, expect, it } from 'vitest';
import { decisionsQuery, messageSignal } from '../../contract/api.js';
import type { DecisionRecord } from '../../contract/state.js';
import type { Role } from '../../models/roles.js';
import { MODEL, message, startSession, uniqueId, userJson } from '../support/harness.js';
import type { ScriptedModelServer } from '../support/model-server.js';
import { faults, type RecordedRequest, type Reply } from '../support/model-server.js';
import { freePorts } from '../support/ports.js';
import { DecisionLog, auditInputs, runHistories, until, workflowTaskFailures } from './audit.js';
import { writeRow } from './rows.js';
import { useKillableWorker } from './sessions.js';

type Fault = 'rate-limited' | 'server-error' | 'timeout' | 'refused' | 'malformed' | 'wrong-shape' | 'out-of-range';
const FAULTS: Fault[] = [
  'rate-limited',
  'server-error',
  'timeout',
  'refused',
  'malformed',
  'wrong-shape',
  'out-of-range',
];
const ROLES: Role[] = ['relevance', 'extraction', 'orchestration', 'compaction', 'agent'];
/** Roles whose output has a range to leave: relevance scores in [0, 1], orchestration ids among the candidates. */
const RANGED = new Set<Role>(['relevance', 'orchestration']);
const settings = { modelTimeoutMs: 1_500, agentTimeoutMs: 1_500, modelAttempts: 2 };

const CASES = ROLES.flatMap((role) =>
  FAULTS.filter((fault) => fault !== 'out-of-range' || RANGED.has(role)).map((fault) => ({ role, fault })),
);

const w = useKillableWorker();

/** The fault tagged in `text` for `role`, e.g. `[agent:timeout]`. */
function tagged(text: string, role: Role): Fault | null {
  const match = new RegExp(`\\[${role}:([a-z-]+)\\]`).exec(text);
  return (match?.[1] as Fault | undefined) ?? null;
}

function faultReply(role: Role, fault: Fault, ok: Reply): Reply {
  switch (fault) {
    case 'rate-limited':
      return faults.rateLimited(1);
    case 'server-error':
      return faults.serverError();
    case 'timeout':
      return faults.slow(60_000, ok);
    case 'refused':
      // Served by the closed port (see `models` below); never reaches this server.
      return ok;
    case 'malformed':
      // The agent's free text can be anything, so its malformed answer is a body that is not JSON.
      return role === 'agent' ? { status: 200, body: 'not json {' } : faults.malformed();
    case 'wrong-shape':
      if (role === 'agent') return { status: 200, body: { unexpected: true } };
      // Orchestration reads a missing kind as "keep the current ones", so its wrong shape is a wrong type.
      return role === 'orchestration' ? { json: { skills: 'not-a-list' } } : faults.wrongShape();
    case 'out-of-range':
      return role === 'relevance'
        ? { json: { phaseRelevance: 1.7, sessionRelevance: -0.2 } }
        : { json: { skills: ['no-such-skill'], toolsets: ['no-such-toolset'], memories: [] } };
  }
}

function script(server: ScriptedModelServer): void {
  const answer = (role: Role, text: string, ok: Reply): Reply => {
    const fault = tagged(text, role);
    return fault ? faultReply(role, fault, ok) : ok;
  };
  server.on(MODEL.relevance, (req) => {
    const { message: text } = userJson<{ message: string }>(req);
    const scores = text.includes('[new-phase]') ? [0.1, 0.9] : [0.9, 0.9];
    return answer('relevance', text, { json: { phaseRelevance: scores[0], sessionRelevance: scores[1] } });
  });
  server.on(MODEL.extraction, (req) => {
    const { phaseGoal } = userJson<{ phaseGoal: string }>(req);
    return answer('extraction', phaseGoal, { json: { terms: ['report', 'charts'] } });
  });
  server.on(MODEL.orchestration, (req) => {
    type Brief = Array<{ id: string }>;
    const { task, candidates } = userJson<{ task: { phaseGoal: string }; candidates: { skills: Brief } }>(req);
    const ok = { json: { skills: candidates.skills.slice(0, 1).map((c) => c.id), toolsets: [], memories: [] } };
    return answer('orchestration', task.phaseGoal, ok);
  });
  server.on(MODEL.compaction, (req) => {
    const { phaseGoal } = userJson<{ phaseGoal: string }>(req);
    return answer('compaction', phaseGoal, { json: { summary: 'phase done' } });
  });
  server.on(MODEL.agent, (req: RecordedRequest) =>
    answer('agent', req.messages.map((m) => m.content).join('\n'), { content: 'Done.' }),
  );
}

beforeAll(async () => {
  script(w.models);
  // A request tagged `[<role>:refused]` goes to this port, where nothing listens (test/support/refusing-models.ts).
  const [closedPort] = (await freePorts(1)) as [number];
  await w.start(uniqueId('faults-models'), { HARNESS_TEST_REFUSED_PORT: String(closedPort) });
});

/** What the first and second input must show for a fault of `role`. */
function recorded(role: Role, fault: Fault, [first, second]: DecisionRecord[]): boolean {
  const fell = (r: DecisionRecord | undefined) => r?.fallbacks.some((f) => f.startsWith(`${role}:`)) ?? false;
  switch (role) {
    case 'relevance':
      return second?.decision === 'degraded' && second.degraded !== null;
    case 'extraction':
      return fell(first);
    case 'orchestration':
      return fault === 'out-of-range' ? (first?.dropped.length ?? 0) > 0 : fell(first);
    case 'compaction':
      return second?.decision === 'new-phase' && fell(second);
    case 'agent':
      return first?.agent?.outcome === 'failed' && second?.agent?.outcome === 'failed';
  }
}

it('records every model fault of every role once per input, and fails no workflow task', async () => {
  const started = Date.now();
  const runs = await Promise.all(
    CASES.map(async ({ role, fault }) => {
      const handle: WorkflowHandle = await startSession(w, { settings });
      const firstRunId = (await handle.describe()).runId;
      const tag = `[${role}:${fault}]`;
      const first = message(`Write the quarterly report with charts ${role === 'relevance' ? '' : tag}`.trim());
      const secondText =
        role === 'relevance'
          ? `Add the regional numbers ${tag}`
          : role === 'compaction'
            ? 'Now email it [new-phase]'
            : 'Add a summary';
      const second = message(secondText);
      await handle.signal(messageSignal, first);
      await handle.signal(messageSignal, second);
      const records = await w.alive(
        until(
          () => handle.query(decisionsQuery),
          (d) => d.length >= 2,
          120_000,
        ),
      );
      const log = new DecisionLog();
      log.add(records);
      const audit = auditInputs(log, [first.messageId, second.messageId]);
      const failures = workflowTaskFailures(await runHistories(w.client, handle.workflowId, firstRunId));
      return { role, fault, audit, failures, ok: recorded(role, fault, records), records };
    }),
  );

  const lost = runs.reduce((n, r) => n + r.audit.lost, 0);
  const duplicated = runs.reduce((n, r) => n + r.audit.duplicated, 0);
  const ours = runs.flatMap((r) => r.failures.ours.map((f) => `${r.role}/${r.fault}: ${f}`));
  const unrecorded = runs.filter((r) => !r.ok).map((r) => `${r.role}/${r.fault}: ${JSON.stringify(r.records)}`);
  writeRow({
    scenario: '5 model faults (role x fault)',
    sessions: runs.length,
    inputs: runs.length * 2,
    lost,
    duplicated,
    failedTasks: ours.length,
    serverFailedTasks: runs.reduce((n, r) => n + r.failures.server, 0),
    timeMs: Date.now() - started,
    notes: `${runs.length} cases (${ROLES.length} roles x ${FAULTS.length} faults, out-of-range for relevance and orchestration); unrecorded: ${unrecorded.length}`,
  });

  expect(unrecorded).toEqual([]);
  expect(runs.map((r) => r.audit)).toEqual(runs.map(() => ({ lost: 0, duplicated: 0, gapFree: true, inOrder: true })));
  expect(ours).toEqual([]);
});

// Found by this suite: an orchestration answer with none of skills/toolsets/memories (e.g.
// `{"unexpected": true}`) used to parse as "keep every current capability", leaving no fallback in the
// record. OrchestrationOutput now requires at least one kind.
it('records an orchestration answer of the wrong shape (no known key) as a fallback', async () => {
  const handle = await startSession(w, { settings });
  const first = message('Write the quarterly report [orchestration:no-keys]');
  w.models.enqueue(MODEL.orchestration, faults.wrongShape());
  await handle.signal(messageSignal, first);
  const [record] = await until(
    () => handle.query(decisionsQuery),
    (d) => d.length >= 1,
    60_000,
  );
  expect(record?.fallbacks.some((f) => f.startsWith('orchestration:'))).toBe(true);
});
