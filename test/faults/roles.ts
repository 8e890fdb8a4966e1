/**
 * The helper roles as the fault scenarios script them on the shared scripted model server: inputs
 * carry their fate in their text, so many Sessions can run side by side, and a "trap" holds the next
 * request of one role open so a kill lands inside that stage.
 */
import { MODEL, userJson } from '../support/harness.js';
import type { Reply, ScriptedModelServer } from '../support/model-server.js';
import type { Role } from '../../models/roles.js';

/** Text of input `k` (0-based) of Session `s`: every 6th starts a new phase, the rest continue it. */
export function inputText(s: number, k: number): string {
  if (k === 0) return `s${s} prepare the quarterly sales report with charts`;
  return k % 6 === 0 ? `s${s} step ${k}: now convert the report to a slide deck` : `s${s} step ${k}: add detail`;
}

export interface Trap {
  /** Holds the next request of `role` open (the model never answers it) and resolves when it arrives. */
  arm(role: Role): Promise<void>;
  disarm(): void;
}

/** Scripts every role by content and returns the trap. */
export function scriptFaultRoles(server: ScriptedModelServer): Trap {
  let armed: { role: Role; hit: () => void } | null = null;
  const serve = (role: Role, reply: Reply): Reply => {
    if (armed?.role !== role) return reply;
    armed.hit();
    armed = null;
    // Longer than any timeout: the worker is killed while it waits, the retry gets a fresh request.
    return { delayMs: 600_000, then: reply };
  };
  server.on(MODEL.relevance, (req) => {
    const { message } = userJson<{ message: string }>(req);
    const newPhase = /now convert/.test(message);
    return serve('relevance', {
      json: newPhase ? { phaseRelevance: 0.1, sessionRelevance: 0.9 } : { phaseRelevance: 0.9, sessionRelevance: 0.9 },
    });
  });
  server.on(MODEL.extraction, (req) => {
    const { phaseGoal } = userJson<{ phaseGoal: string }>(req);
    return serve('extraction', { json: { terms: phaseGoal.toLowerCase().split(/\W+/).filter(Boolean).slice(0, 8) } });
  });
  server.on(MODEL.orchestration, (req) => {
    type Brief = Array<{ id: string }>;
    const { candidates } = userJson<{ candidates: { skills: Brief; toolsets: Brief } }>(req);
    const top = (list: Brief) => list.slice(0, 1).map((c) => c.id);
    return serve('orchestration', {
      json: { skills: top(candidates.skills), toolsets: top(candidates.toolsets), memories: [] },
    });
  });
  server.on(MODEL.compaction, () => serve('compaction', { json: { summary: 'The report phase is done.' } }));
  server.on(MODEL.agent, () => serve('agent', { content: 'Done.' }));
  return {
    arm: (role) =>
      new Promise<void>((resolve) => {
        armed = { role, hit: resolve };
      }),
    disarm: () => {
      armed = null;
    },
  };
}
