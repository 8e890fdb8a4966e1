/**
 * The arguments and results of the Session's queries and of the `result` update, as zod schemas:
 * the client's types are inferred from them and `npm run contract` publishes them as JSON Schema.
 *
 * Pure module: safe to import from workflow code.
 */
import { z } from 'zod';
import { approvalContext } from './events.js';
import { Settings } from './messages.js';
import { SettingClamp } from './worker-policy.js';
import { Capabilities, DecisionRecord, Goal, SESSION_STAGES, SessionState, TurnOutcome } from './state.js';
import { UsageTotals } from './usage.js';
import { GoalChange } from './goals.js';

/** The longest the `result` update waits, in ms. */
export const RESULT_WAIT_MAX_MS = 60_000;

/** Result of the `goals` query. */
export const GoalsResult = z.object({
  session: Goal.nullable(),
  phase: Goal.nullable(),
  /** The newest goal changes (at most 10), oldest first; absent from workers older than goal statements. */
  history: z.array(GoalChange).optional(),
});
export type GoalsResult = z.infer<typeof GoalsResult>;

/** The optional argument of the `decisions` and `history` queries. */
export const LimitArgument = z.object({ limit: z.number().int().positive().optional() }).strict();
export type LimitArgument = z.infer<typeof LimitArgument>;

/** One tool call waiting for approval, as the `snapshot` query lists it. */
export const PendingApproval = z.object({
  approvalId: z.string(),
  /** SHA-256 (hex) of the call's full arguments; an approval that carries it answers only these arguments. */
  argumentsHash: z.string(),
  callId: z.string(),
  seq: z.number().int(),
  tool: z.string(),
  arguments: z.string(),
  requestedAt: z.number().nullable(),
  ...approvalContext,
});
export type PendingApproval = z.infer<typeof PendingApproval>;

/** One call waiting for approval across Sessions, as the gateway's approval inbox (`GET /approvals`) lists it. */
export const InboxEntry = PendingApproval.extend({
  sessionId: z.string(),
  /** The Session's goal, clipped to 300 characters; null before it has one. */
  goal: z.string().nullable(),
});
export type InboxEntry = z.infer<typeof InboxEntry>;

/** The `snapshot` query: everything an operator needs at a glance. */
export const SessionView = z.object({
  sessionId: z.string(),
  parentSessionId: z.string().nullable(),
  profile: z.string(),
  status: SessionState.shape.status,
  stage: z.enum(SESSION_STAGES),
  run: z.number().int(),
  queueLength: z.number().int(),
  seq: z.object({ lastAccepted: z.number().int(), lastBound: z.number().int() }),
  counts: SessionState.shape.counts,
  goals: SessionState.shape.goals,
  phase: z
    .object({
      index: z.number().int(),
      startedAtSeq: z.number().int(),
      previous: z.array(
        z.object({ index: z.number().int(), goal: z.string(), compaction: z.string(), summary: z.string().nullable() }),
      ),
    })
    .nullable(),
  capabilities: Capabilities,
  /** The newest capability revisions: by the phase's orchestration or the agent (empty from older workers). */
  capabilityRevisions: SessionState.shape.capabilityRevisions,
  /** The newest goal changes (at most 10), oldest first (empty from older workers). */
  goalHistory: SessionState.shape.goalHistory,
  lastDecision: DecisionRecord.nullable(),
  pendingOutOfScope: z.number().int(),
  children: SessionState.shape.children,
  /** What the Session's tool calls produced or named, oldest first, one per uri (empty from older workers). */
  artifacts: SessionState.shape.artifacts,
  recentRejections: SessionState.shape.rejections,
  /** The last control events: approvals, tool results, notifications, commands and an idle close. */
  recentControlEvents: SessionState.shape.controlEvents,
  settings: Settings,
  /** Tokens, latency and cost of the Session's model calls, per role and in all (absent from workers before accounting). */
  usage: UsageTotals.optional(),
  /** Settings the worker's caps changed from what the start asked for (empty: none). */
  settingsClamped: z.array(SettingClamp),
  /** The agent turn in progress, if any. */
  turn: z.object({ seq: z.number().int(), steps: z.number().int(), interrupted: z.boolean() }).nullable(),
  /**
   * Tool calls waiting now until a person approves or rejects them. The `approval` signal answers one
   * by its `approvalId` (`<seq>:<step>:<callId>`), optionally with its `argumentsHash`.
   */
  pendingApprovals: z.array(PendingApproval),
  /**
   * External tool calls waiting for a `toolResult` with their callId and `resultId`
   * (`<seq>:<step>:<callId>`; absent from older workers).
   */
  pendingToolCalls: z.array(
    z.object({
      callId: z.string(),
      resultId: z.string().optional(),
      seq: z.number().int(),
      tool: z.string(),
      arguments: z.string(),
    }),
  ),
});
export type SessionView = z.infer<typeof SessionView>;
/** The `result` update's argument: the input's seq (as `submit` returned it) and how long to wait. */
export const ResultRequest = z
  .object({
    seq: z.number().int().positive(),
    /** How long to wait for the turn to end or to wait for someone; at most RESULT_WAIT_MAX_MS. */
    timeoutMs: z.number().int().min(0).max(RESULT_WAIT_MAX_MS).default(30_000),
  })
  .strict();
export type ResultRequest = z.infer<typeof ResultRequest>;

/** What the `result` update returns. */
export const TurnResult = z.object({
  seq: z.number().int(),
  /** `done`: the record is final. `waiting`: the turn waits for an approval or a tool result. `pending`: not yet. */
  status: z.enum(['done', 'waiting', 'pending', 'unknown']),
  outcome: TurnOutcome.nullable(),
  record: DecisionRecord.nullable(),
});
export type TurnResult = z.infer<typeof TurnResult>;
