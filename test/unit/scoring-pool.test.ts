/** The local provider's scoring threads: same answers as on the calling thread, and every way a task can end. */
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE } from '../../contract/failures.js';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalModels } from '../../models/local-models.js';
import { ScoringPool } from '../../models/local/scoring-pool.js';
import type { LocalRoleSettings, LocalRoleTask } from '../../models/local/local-roles.js';

const call = { timeoutMs: 120_000 };
const settings: LocalRoleSettings = {
  maxTerms: 12,
  orchestration: { floor: 0.5, perKind: 3 },
  summary: { maxSentences: 4, maxWords: 120 },
};
const relevance = (text: string): Extract<LocalRoleTask, { role: 'relevance' }> => ({
  role: 'relevance',
  request: { message: { text, resources: [] }, phaseGoal: 'Write a Markdown guide', sessionGoal: 'ComfyUI guide' },
});

describe('LocalModels with scoring threads', () => {
  const pooled = new LocalModels({ threads: 2 });
  const inline = new LocalModels();
  afterAll(() => pooled.close());

  it('answers every role exactly as on the calling thread', async () => {
    const task = {
      sessionGoal: 'ComfyUI guide',
      phaseGoal: 'Write a Markdown guide',
      message: 'Add a FAQ',
      resources: [],
    };
    const empty = { skills: [], toolsets: [], memories: [] };
    const orchestration = {
      task,
      mode: 'init' as const,
      current: empty,
      candidates: { ...empty, skills: [{ id: 'markdown-guide', name: 'Markdown guide', source: 'catalog', score: 2 }] },
    };
    for (const text of ['Add a FAQ section', '把指南翻译成英文', 'book me a table for two', 'ok']) {
      const request = { message: { text, resources: [] }, phaseGoal: task.phaseGoal, sessionGoal: task.sessionGoal };
      expect(await pooled.relevance(request, call)).toEqual(await inline.relevance(request, call));
    }
    expect(await pooled.extract({ task }, call)).toEqual(await inline.extract({ task }, call));
    expect(await pooled.orchestrate(orchestration, call)).toEqual(await inline.orchestrate(orchestration, call));
    const phase = { phaseGoal: task.phaseGoal, inputs: ['Write the install section.', 'Add screenshots of nodes.'] };
    expect(await pooled.compact(phase, call)).toEqual(await inline.compact(phase, call));
  });

  it('reports a phase with nothing to summarise as invalid output, as on the calling thread', async () => {
    const error = await pooled.compact({ phaseGoal: 'x', inputs: ['ok', 'thanks'] }, call).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect((error as ApplicationFailure).type).toBe(FAILURE.ModelInvalidOutput);
  });
});

describe('ScoringPool', () => {
  it('is ready once every thread has loaded, and refuses once closed', async () => {
    const pool = new ScoringPool(2);
    await pool.ready();
    // Both threads answered a task, so both loaded the thread file and its warm-up.
    expect(new Set(pool.threadIds()).size).toBe(2);
    await pool.close();
    await expect(pool.ready()).rejects.toThrow('the scoring pool is closed');
  });

  it('drops a waiting task whose call is cancelled and still runs the one before it', async () => {
    const pool = new ScoringPool(1);
    try {
      const cancel = new AbortController();
      const first = pool.run(relevance('Add a FAQ'), settings, call);
      const second = pool.run(relevance('Add a FAQ'), settings, { ...call, signal: cancel.signal });
      cancel.abort(new Error('workflow cancelled'));
      await expect(second).rejects.toThrow('workflow cancelled');
      expect((await first).phaseRelevance).toBeGreaterThanOrEqual(0);
      await expect(
        pool.run(relevance('x'), settings, { ...call, signal: AbortSignal.abort(new Error('already')) }),
      ).rejects.toThrow('already');
    } finally {
      await pool.close();
    }
  });

  it('ends a task that outlives its time budget with a retryable timeout and replaces the thread', async () => {
    const pool = new ScoringPool(1);
    try {
      const [before] = pool.threadIds();
      // The thread is still loading its models (seconds), far beyond a 1 ms budget.
      const error = await pool.run(relevance('Add a FAQ'), settings, { timeoutMs: 1 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ApplicationFailure);
      expect((error as ApplicationFailure).type).toBe(FAILURE.ModelTimeout);
      expect((error as ApplicationFailure).nonRetryable).toBeFalsy();
      expect(pool.threadIds()).not.toContain(before);
      expect((await pool.run(relevance('Add a FAQ'), settings, call)).sessionRelevance).toBeGreaterThanOrEqual(0);
    } finally {
      await pool.close();
    }
  });

  it('refuses tasks once closed and rejects the ones still waiting', async () => {
    const pool = new ScoringPool(1);
    const waiting = expect(pool.run(relevance('Add a FAQ'), settings, call)).rejects.toThrow('closed');
    await pool.close();
    await waiting;
    await expect(pool.run(relevance('x'), settings, call)).rejects.toThrow('closed');
    expect(() => new ScoringPool(0)).toThrow(RangeError);
  });
});
