/**
 * The stage runner's record keeping when stages run beside each other: an entry reserved at its start
 * keeps the order the stages began in, whichever ends first, and says `running` until it ends.
 */
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import type { DecisionRecord, SessionStage } from '../../contract/state.js';
import { STAGE } from '../../contract/state.js';
import { recordStage, runStage, type StageShow } from '../../workflows/stages/stage-runner.js';

function emptyRecord(): DecisionRecord {
  return { stages: [] } as unknown as DecisionRecord;
}

/** A promise and the function that settles it. */
function gate<T>() {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

describe('runStage', () => {
  it('records a stage when it ends, or from its start with reserve, so one beside others keeps its place', async () => {
    const record = emptyRecord();
    const shown: Array<SessionStage | undefined> = [];
    const finished: string[] = [];
    const show: StageShow = Object.assign((stage?: SessionStage) => void shown.push(stage), {
      finished: (stage: { stage: string }) => void finished.push(stage.stage),
    });
    const compaction = gate<string>();
    const beside = runStage(
      record,
      STAGE.compact,
      () => undefined,
      () => compaction.promise,
      { reserve: true },
    );
    expect(record.stages).toEqual([expect.objectContaining({ stage: STAGE.compact, outcome: 'running' })]);
    recordStage(record, STAGE.extract, 'terms from the relevance call');
    await runStage(record, STAGE.orchestrate, show, () => Promise.resolve('picked'));
    compaction.open('summary');
    await expect(beside).resolves.toEqual({ ok: true, value: 'summary' });
    expect(record.stages.map((s) => [s.stage, s.outcome])).toEqual([
      [STAGE.compact, 'ok'],
      [STAGE.extract, 'terms from the relevance call'],
      [STAGE.orchestrate, 'ok'],
    ]);
    expect(shown).toEqual([STAGE.orchestrate]);
    expect(finished).toEqual([STAGE.orchestrate]);
  });

  it('turns a failure of a reserved stage into a fallback outcome in its own entry', async () => {
    const record = emptyRecord();
    const result = await runStage(
      record,
      STAGE.compact,
      () => undefined,
      () => Promise.reject(ApplicationFailure.nonRetryable('model down', 'ModelServerError')),
      { reserve: true },
    );
    expect(result).toEqual({ ok: false, reason: 'ModelServerError: model down' });
    expect(record.stages).toEqual([
      expect.objectContaining({ stage: STAGE.compact, outcome: 'fallback: ModelServerError: model down' }),
    ]);
  });
});
