/**
 * A 1,500-signal burst to one Session with 100 ids re-sent among them: exactly 1,500 accepted, 100
 * duplicates, every input bound once, in the order the server received the signals, across the
 * continue-as-new runs the burst causes.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { beforeAll, expect, inject, it } from 'vitest';
import { messageSignal, snapshotQuery } from '../../contract/api.js';
import { MODEL, message, startSession, uniqueId } from '../support/harness.js';
import {
  BindingLog,
  auditInputs,
  replayEvents,
  runHistories,
  until,
  workflowTaskFailures,
  workflowTaskLoad,
} from './audit.js';
import { writeRow } from './rows.js';
import { useKillableWorker } from './sessions.js';

const UNIQUE = 1_500;
const RESENT = 100;

const w = useKillableWorker();

beforeAll(async () => {
  w.models.on(MODEL.relevance, { json: { phaseRelevance: 0.9, sessionRelevance: 0.9 } });
  w.models.on(MODEL.extraction, { json: { terms: ['burst'] } });
  w.models.on(MODEL.orchestration, { json: { skills: [], toolsets: [], memories: [] } });
  await w.start(uniqueId('faults-burst'));
});

it('accepts 1,500 of 1,600 signals, recognises the 100 re-sent ids, and binds each input once in order', async () => {
  const started = Date.now();
  // The agent turn is off: this scenario is about intake and binding, not the inner loop.
  const handle = await startSession(w, { settings: { agentTurn: false, keepDecisions: 1_000 } });
  const firstRunId = (await handle.describe()).runId;
  const inputs = Array.from({ length: UNIQUE }, (_, i) => message(`burst input ${i}`));
  // Every 15th input is sent again right after its batch: a client retrying at-least-once delivery.
  const resent = inputs.filter((_, i) => i % 15 === 0).slice(0, RESENT);
  expect(resent).toHaveLength(RESENT);

  for (let i = 0; i < UNIQUE; i += 100) {
    const batch = inputs.slice(i, i + 100);
    await Promise.all(batch.map((m) => handle.signal(messageSignal, m)));
    const again = resent.filter((m) => batch.includes(m));
    await Promise.all(again.map((m) => handle.signal(messageSignal, m)));
  }

  // A crashed worker process fails the scenario at once, with its exit, not after the wait's 600 s.
  const done = await w.alive(
    until(
      () => handle.query(snapshotQuery),
      (s) => s.seq.lastBound === UNIQUE && s.queueLength === 0 && s.stage === 'Idle',
      300_000,
      (s) => s.seq.lastBound,
    ),
  );

  // Audited from the durable history: the bounded `decisions` window rotates 1,500 records out faster
  // than a poll can read them on a loaded machine.
  const histories = await runHistories(w.client, handle.workflowId, firstRunId);
  const log = new BindingLog(await replayEvents(handle.workflowId, histories, inject('workflowBundlePath')));
  // The order the server recorded the signals in: the first occurrence of each id binds.
  const received: string[] = [];
  const seen = new Set<string>();
  for (const history of histories) {
    for (const event of history.events ?? []) {
      const attrs = event.workflowExecutionSignaledEventAttributes;
      if (attrs?.signalName !== 'message' || !attrs.input?.payloads?.[0]) continue;
      const { messageId } = defaultPayloadConverter.fromPayload<{ messageId: string }>(attrs.input.payloads[0]);
      if (!seen.has(messageId)) received.push(messageId);
      seen.add(messageId);
    }
  }
  const audit = auditInputs(log, received);
  const failures = workflowTaskFailures(histories);
  const load = workflowTaskLoad(histories);
  writeRow({
    scenario: '3 burst 1,500 + 100 re-sent',
    sessions: 1,
    inputs: UNIQUE + RESENT,
    lost: audit.lost,
    duplicated: audit.duplicated,
    failedTasks: failures.ours.length,
    serverFailedTasks: failures.server,
    timeMs: Date.now() - started,
    notes: `accepted ${done.counts.accepted}, duplicates ${done.counts.duplicates}, runs ${histories.length}; longest task ${load.longestMs} ms, most signals in one ${load.mostSignals}`,
  });

  expect(received).toHaveLength(UNIQUE);
  expect(done.counts.accepted).toBe(UNIQUE);
  expect(done.counts.duplicates).toBe(RESENT);
  expect(done.counts.rejected).toBe(0);
  expect(done.counts.bound).toBe(UNIQUE);
  expect(audit).toEqual({ lost: 0, duplicated: 0, gapFree: true, inOrder: true });
  expect(log.bySeq.size).toBe(UNIQUE);
  expect(log.finishedTurns).toBe(UNIQUE);
  expect(failures.ours).toEqual([]);
  // Bound by progress, not time (until): at load average 35 on two cores it bound 1,000 inputs in 600 s.
}, 3_600_000);
