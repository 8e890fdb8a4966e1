/**
 * kill -9 of the worker process inside each stage (understanding, extraction, orchestration,
 * compaction, an agent step) while 30 Sessions each work through 20 inputs. A trap holds one model
 * request of the chosen role open, so the kill lands exactly there; a new worker process takes over.
 * Every input still gets exactly one decision record, in order, and no workflow task fails.
 */
import { expect, it } from 'vitest';
import type { Role } from '../../models/roles.js';
import { uniqueId } from '../support/harness.js';
import { inputText, scriptFaultRoles } from './roles.js';
import {
  auditSessions,
  expectAuditClean,
  sendInputs,
  settled,
  startSessions,
  useKillableWorker,
  writeAuditRow,
} from './sessions.js';

const SESSIONS = 30;
const INPUTS = 20;
const STAGES: Role[] = ['relevance', 'extraction', 'orchestration', 'compaction', 'agent'];
/** Small timeouts so the attempt a kill orphans is retried within seconds. */
const settings = { modelTimeoutMs: 3_000, agentTimeoutMs: 5_000, modelAttempts: 3 };

const stack = useKillableWorker();

it('loses and repeats nothing when the worker is SIGKILLed inside every stage', async () => {
  const started = Date.now();
  const trap = scriptFaultRoles(stack.models);
  const taskQueue = uniqueId('faults-kill');
  await stack.start(taskQueue);
  const sessions = await startSessions(stack.client, { count: SESSIONS, prefix: 'kill', taskQueue, settings });
  const sending = sendInputs(sessions, INPUTS, inputText);

  const kills: string[] = [];
  const missed: string[] = [];
  for (const round of [1, 2]) {
    for (const stage of STAGES) {
      const hit = await Promise.race([
        trap.arm(stage).then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), 60_000)),
      ]);
      if (!hit) {
        trap.disarm();
        missed.push(`${stage}#${round}`);
        continue;
      }
      await stack.killAndReplace();
      kills.push(`${stage}#${round}`);
    }
  }
  await sending;

  const snapshots = await settled(sessions, INPUTS);
  const audit = await auditSessions(stack.client, sessions);
  const degraded = audit.records
    .flat()
    .filter((r) => r.degraded !== null || r.fallbacks.length > 0 || r.agent?.outcome !== 'replied').length;
  snapshots.forEach((snapshot, i) => {
    if (snapshot.counts.bound !== INPUTS) audit.problems.push(`session ${i}: bound ${snapshot.counts.bound}`);
  });
  writeAuditRow(audit, {
    scenario: '1 worker kill -9 per stage',
    sessions: SESSIONS,
    inputs: SESSIONS * INPUTS,
    started,
    kills,
    missed,
    notes: `inputs degraded or with a failed/fallback stage: ${degraded}`,
  });

  expect(missed).toEqual([]);
  expect(kills).toHaveLength(STAGES.length * 2);
  expectAuditClean(audit);
});
