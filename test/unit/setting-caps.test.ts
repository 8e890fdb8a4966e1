import { describe, expect, it } from 'vitest';
import { DEFAULT_WORKER_POLICY, type WorkerPolicy } from '../../contract/worker-policy.js';
import { applyCaps } from '../../workflows/run/setting-caps.js';
import { initialState } from '../../workflows/run/state.js';
import { loadConfig } from '../../worker/config.js';

const policy = (over: Partial<WorkerPolicy> = {}): WorkerPolicy => ({ ...DEFAULT_WORKER_POLICY, ...over });
const run = (fresh: boolean) => ({ ownQueue: 'sessions', fresh, now: 5 });

describe('applyCaps', () => {
  it('leaves default settings alone under the default caps', () => {
    const state = initialState({ sessionId: 's' });
    const before = structuredClone(state.settings);
    expect(applyCaps(state, policy(), run(true))).toEqual({ kind: 'applied', clamps: [] });
    expect(state.settings).toEqual(before);
    expect(state.controlEvents).toEqual([]);
  });

  it('lets the Session name its own queue or an allowed one, and refuses any other at a fresh start', () => {
    for (const queue of ['sessions', 'agents']) {
      const state = initialState({ sessionId: 's', settings: { agentTaskQueue: queue } });
      expect(applyCaps(state, policy({ allowedAgentTaskQueues: ['agents'] }), run(true)).kind).toBe('applied');
    }
    const state = initialState({ sessionId: 's', settings: { agentTaskQueue: 'elsewhere' } });
    const result = applyCaps(state, policy({ allowedAgentTaskQueues: ['agents'] }), run(true));
    expect(result).toEqual({
      kind: 'refused',
      reason:
        'settings.agentTaskQueue "elsewhere" is not allowed by this worker (allowed: sessions, agents; HARNESS_ALLOWED_AGENT_TASK_QUEUES)',
    });
  });

  it('falls a continued run back to its own queue when its queue is no longer allowed, and says so', () => {
    const state = initialState({ sessionId: 's', settings: { agentTaskQueue: 'agents' } });
    state.run = 3;
    expect(applyCaps(state, policy(), run(false))).toEqual({
      kind: 'applied',
      clamps: [{ field: 'agentTaskQueue', asked: 'agents', used: null, run: 3 }],
    });
    expect(state.settings.agentTaskQueue).toBeUndefined();
    expect(state.controlEvents.at(-1)).toEqual({
      at: 5,
      kind: 'command',
      id: 'worker-caps',
      summary: `settings capped by the worker: agentTaskQueue "agents" → the Session's own queue`,
    });
  });

  it('bounds the idle timeout, a never-closing Session included, when the worker caps it', () => {
    const caps = { ...DEFAULT_WORKER_POLICY.caps, idleTimeoutMs: 60_000 };
    const never = initialState({ sessionId: 's' });
    applyCaps(never, policy({ caps }), run(true));
    expect(never.settings.idleTimeoutMs).toBe(60_000);
    expect(never.settingsClamped).toEqual([{ field: 'idleTimeoutMs', asked: null, used: 60_000, run: 1 }]);
    const shorter = initialState({ sessionId: 's', settings: { idleTimeoutMs: 5_000 } });
    expect(applyCaps(shorter, policy({ caps }), run(true))).toEqual({ kind: 'applied', clamps: [] });
  });
});

describe('worker caps from the environment', () => {
  it('reads HARNESS_MAX_* and the allowed queues; unset caps keep their defaults', () => {
    const config = loadConfig({
      HARNESS_MAX_AGENT_STEPS: '8',
      HARNESS_MAX_TOOL_TIMEOUT_MS: '30000',
      HARNESS_ALLOWED_AGENT_TASK_QUEUES: ' agents, gpu-agents ,',
    });
    expect(config.policy).toEqual({
      caps: { maxAgentSteps: 8, toolTimeoutMs: 30_000 },
      allowedAgentTaskQueues: ['agents', 'gpu-agents'],
      controlKeys: [],
      speculativeAgentStep: true,
    });
  });

  it('lets a worker forbid speculative agent steps (HARNESS_SPECULATIVE_AGENT_STEP=off)', () => {
    expect(loadConfig({ HARNESS_SPECULATIVE_AGENT_STEP: 'off' }).policy.speculativeAgentStep).toBe(false);
    expect(() => loadConfig({ HARNESS_SPECULATIVE_AGENT_STEP: 'no' })).toThrow(/HARNESS_SPECULATIVE_AGENT_STEP/);
  });

  it('names the variable of a bad cap', () => {
    expect(() => loadConfig({ HARNESS_MAX_AGENT_STEPS: '0' })).toThrow(/HARNESS_MAX_AGENT_STEPS/);
  });
});
