/**
 * The Session's carried state as the workflow enters it: built from a start argument, or restored
 * from what continue-as-new carried (older schema versions migrated). The schema is contract/state.ts.
 */
import { SessionId, Settings, type SessionStart } from '../../contract/messages.js';
import { CARRIED_LISTS, SCHEMA_VERSION, SessionState, type CarriedListName, type Goal } from '../../contract/state.js';
import { describeIssues } from '../../contract/text.js';
import { emptyTotals } from '../../contract/usage.js';
import { dedupeKey } from '../ledger/intake.js';

/** Builds the state of a brand-new Session from its (already validated) start argument. */
export function initialState(start: SessionStart): SessionState {
  const goal = (text: string | undefined): Goal | null => (text ? { text, resources: [], setAtSeq: 0 } : null);
  const sessionGoal = goal(start.goals?.session);
  // A phase goal without a session goal would leave the Session without a responsibility; the phase
  // text then serves as both, as it would for a first input.
  const phaseGoal = goal(start.goals?.phase) ?? sessionGoal;
  // Every carried list starts empty, in the schema's field order; the first phase is the exception.
  const { phases, ...lists } = emptyCarriedLists();
  return {
    schemaVersion: SCHEMA_VERSION,
    sessionId: start.sessionId,
    parentSessionId: start.parentSessionId ?? null,
    depth: start.depth ?? (start.parentSessionId ? 1 : 0),
    profile: start.profile ?? 'default',
    settings: Settings.parse(start.settings ?? {}),
    status: 'active',
    goals: { session: sessionGoal ?? phaseGoal, phase: phaseGoal },
    capabilities: { skills: [], toolsets: [], memories: [], revision: 0 },
    phases: phaseGoal
      ? [{ index: 0, goal: phaseGoal, startedAtSeq: 0, endedAtSeq: null, compaction: 'open', summary: null }]
      : phases,
    nextSeq: 1,
    boundSeq: 0,
    ...lists,
    turn: null,
    counts: {
      accepted: 0,
      duplicates: 0,
      rejected: 0,
      rejectedBy: {},
      bound: 0,
      controlEvents: 0,
      byDecision: {},
    },
    run: 1,
    usage: emptyTotals(),
    lastEvent: null,
    replayWindow: {},
  };
}

/** One empty array per CARRIED_LISTS row, in table order. */
function emptyCarriedLists(): Record<CarriedListName, never[]> {
  return Object.fromEntries(Object.keys(CARRIED_LISTS).map((name) => [name, []])) as Record<CarriedListName, never[]>;
}

/** Parses carried state, migrating older schema versions. */
export function restoreState(raw: unknown): { ok: true; state: SessionState } | { ok: false; reason: string } {
  const migrated = isVersion(raw, 1) ? migrateV1(raw) : raw;
  const parsed = SessionState.safeParse(migrated);
  if (!parsed.success) return { ok: false, reason: describeIssues(parsed.error) };
  return { ok: true, state: parsed.data };
}

function isVersion(raw: unknown, version: number): raw is Record<string, unknown> {
  return typeof raw === 'object' && raw !== null && (raw as { schemaVersion?: unknown }).schemaVersion === version;
}

/**
 * Version 1 kept queued and bound ids in one list keyed by the bare messageId (a routed input as
 * `routed:<sessionId>:<messageId>`, which a user's id could imitate). Version 2 keeps only bound
 * ids, in the collision-proof key form; queued ids come from the queue. New fields take defaults.
 */
function migrateV1(raw: Record<string, unknown>): Record<string, unknown> {
  const boundSeq = typeof raw.boundSeq === 'number' ? raw.boundSeq : 0;
  const recent = Array.isArray(raw.recent) ? (raw.recent as unknown[]) : [];
  const migrated = recent.flatMap((entry): Array<[string, number]> => {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string' || typeof entry[1] !== 'number') return [];
    if (entry[1] > boundSeq) return [];
    const routed = /^routed:([^:]+):([\s\S]*)$/.exec(entry[0]);
    if (routed?.[1] && routed[2] !== undefined && SessionId.safeParse(routed[1]).success) {
      return [[dedupeKey({ messageId: routed[2], routed: { fromSessionId: routed[1] } }), entry[1]]];
    }
    return [[dedupeKey({ messageId: entry[0] }), entry[1]]];
  });
  return { ...raw, schemaVersion: SCHEMA_VERSION, recent: migrated };
}
