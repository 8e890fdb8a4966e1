/**
 * The Session's durable state: plain JSON with a schemaVersion, carried across continue-as-new and
 * parsed on entry. Everything here is bounded, however long the Session lives.
 *
 * Pure module: safe to import from workflow code.
 */
import { z } from 'zod';
import { HandOverReason, ResourceRef, Sender, Settings } from './messages.js';
import { SessionEvent } from './events.js';
import { PolicyDecision, ResolvedToolCall, ToolCallStatus, TranscriptItem } from './transcript.js';
import { UsageTotals, emptyTotals } from './usage.js';
import { SettingClamp } from './worker-policy.js';
import { ControlSignature } from './control-signature.js';
import { GoalChange } from './goals.js';

/** Version of the carried state; older versions are migrated on entry (workflows/run/state.ts restoreState). */
export const SCHEMA_VERSION = 2;

/**
 * User-facing stage names, referred to by key. The values are wire contract: they show in the Web
 * UI's current details, the `SessionStage` search attribute and `snapshot().stage`.
 */
export const STAGE = {
  understand: 'Understanding the task meaning',
  extract: 'Extracting task terms',
  discover: 'Discovering task capabilities',
  orchestrate: 'Orchestrating the task',
  apply: 'Applying the task environment',
  compact: 'Compacting the previous phase',
  route: 'Routing the request',
  agent: 'Running the agent',
  waitingApproval: 'Waiting for approval',
  waitingTool: 'Waiting for a tool result',
  idle: 'Idle',
  paused: 'Paused',
  closed: 'Closed',
} as const;
/** The five task-control stages, in the order they can run. */
export const TASK_CONTROL_STAGES = [
  STAGE.understand,
  STAGE.extract,
  STAGE.discover,
  STAGE.orchestrate,
  STAGE.apply,
] as const;
/** Every value of the SessionStage search attribute and of `snapshot().stage`. */
export const SESSION_STAGES = Object.values(STAGE);
export type SessionStage = (typeof STAGE)[keyof typeof STAGE];

export const DECISIONS = [
  'initialize',
  'continue',
  'new-phase',
  'out-of-scope',
  'conflict',
  'uncertain',
  'degraded',
] as const;
export const Decision = z.enum(DECISIONS);
export type Decision = z.infer<typeof Decision>;

/**
 * A goal: the task statement the Session committed (`text`), and the raw message it was stated from
 * (`source`; absent from goals set before statements, by a command or from the start argument).
 */
export const Goal = z.object({
  text: z.string(),
  resources: z.array(ResourceRef),
  setAtSeq: z.number().int(),
  source: z.string().optional(),
});
export type Goal = z.infer<typeof Goal>;

export const Cap = z.object({ id: z.string(), name: z.string(), source: z.string() });
export type Cap = z.infer<typeof Cap>;
export const CAP_KINDS = ['skills', 'toolsets', 'memories'] as const;
export type CapKind = (typeof CAP_KINDS)[number];

export const Capabilities = z.object({
  skills: z.array(Cap),
  toolsets: z.array(Cap),
  memories: z.array(Cap),
  revision: z.number().int().nonnegative(),
});
export type Capabilities = z.infer<typeof Capabilities>;

export const CapabilityDiff = z.object({
  added: z.array(z.string()),
  removed: z.array(z.string()),
  kept: z.array(z.string()),
});
export type CapabilityDiff = z.infer<typeof CapabilityDiff>;

/** Who changed the loaded capabilities: the phase's orchestration, or the agent's own load or unload. */
export const RevisionReason = z.enum(['orchestration', 'agent']);
export type RevisionReason = z.infer<typeof RevisionReason>;

/** One change of the loaded capabilities, newest last: what revision it made, why, and for which input. */
export const CapabilityRevision = z.object({
  revision: z.number().int().nonnegative(),
  reason: RevisionReason,
  seq: z.number().int(),
  /** The agent's `capabilities_load` / `capabilities_unload` call; null for orchestration. */
  callId: z.string().nullable(),
  added: z.array(z.string()),
  removed: z.array(z.string()),
  at: z.number(),
});
export type CapabilityRevision = z.infer<typeof CapabilityRevision>;

export const StageRecord = z.object({
  stage: z.string(),
  startedAt: z.number(),
  endedAt: z.number(),
  /**
   * `ok`, `fallback: <why>`, `skipped: <why>`, or what stood in for the stage (`terms from the relevance
   * call`); `running` only while a stage that runs beside others has not ended.
   */
  outcome: z.string(),
});
export type StageRecord = z.infer<typeof StageRecord>;

/** How the business agent's turn for an input ended (or, while it waits, where it stands). */
export const TURN_OUTCOMES = [
  'replied',
  'waiting-approval',
  'waiting-tool',
  'interrupted',
  'guarded',
  'failed',
  'skipped',
  /** A token or cost budget was exhausted before the next model step (contract/usage.ts). */
  'budget-exceeded',
  /** The input joined the turn that ran when it arrived (`whileBusy: merge`); that turn's record has the reply. */
  'merged',
] as const;
export const TurnOutcome = z.enum(TURN_OUTCOMES);
export type TurnOutcome = z.infer<typeof TurnOutcome>;

/** Who answered a call that waited for approval, how, and when (workflow time). */
export const ApprovalRecord = z.object({
  approved: z.boolean(),
  /** The approver as the `approval` signal named them; null when it named nobody. */
  by: z.string().nullable(),
  note: z.string().nullable(),
  at: z.number(),
});
export type ApprovalRecord = z.infer<typeof ApprovalRecord>;

/** One tool call as the decision record shows it (arguments and result clipped). */
export const AgentToolCall = z.object({
  callId: z.string(),
  tool: z.string(),
  arguments: z.string(),
  status: ToolCallStatus,
  result: z.string().nullable(),
  /** Set when the call waited for approval and someone answered (added in schemaVersion 2). */
  approval: ApprovalRecord.nullable().default(null),
  /** The approval-policy rule that decided the call, when one matched (added after schemaVersion 2 shipped). */
  policy: PolicyDecision.nullable().default(null),
  /** The model's arguments when the approver edited them (`arguments` is then what ran); null when unedited. */
  originalArguments: z.string().nullable().default(null),
  /** Who edited the arguments (the approver as named); null when unedited or unnamed. */
  editedBy: z.string().nullable().default(null),
});
export type AgentToolCall = z.infer<typeof AgentToolCall>;

/** The business-agent turn after alignment. Kept apart from `stages`, which are the alignment stages. */
export const AgentOutcome = z.object({
  outcome: TurnOutcome,
  reason: z.string().nullable(),
  startedAt: z.number(),
  endedAt: z.number(),
  // Added in schemaVersion 2 (the tool loop); defaults keep version-1 records valid.
  reply: z.string().nullable().default(null),
  steps: z.number().int().nonnegative().default(0),
  toolCalls: z.array(AgentToolCall).default([]),
  /**
   * The reply a follow-up turn replaced (workflows/children/collaboration.ts): what the agent said
   * before a collaborating sub-session's reply came back. Absent when no follow-up ran.
   */
  earlierReply: z.string().nullable().optional(),
});
export type AgentOutcome = z.infer<typeof AgentOutcome>;

/** What a sub-session answered to one handed-over input, as the parent records it. */
export const SubSessionAnswer = z.object({
  sessionId: z.string(),
  /** The sub-session's input seq it answered. */
  seq: z.number().int(),
  outcome: TurnOutcome,
  /** The reply text (clipped to LIMITS.replyChars), or null when the turn ended without one. */
  text: z.string().nullable(),
  at: z.number(),
});
export type SubSessionAnswer = z.infer<typeof SubSessionAnswer>;

/**
 * How a delegation's answer is used: `collaborate` (the default for `session_create_sub`) runs a
 * follow-up turn of the parent's agent with the reply in context; `notify` (routed out-of-scope
 * inputs) only records it.
 */
export const DelegationMode = z.enum(['collaborate', 'notify']);
export type DelegationMode = z.infer<typeof DelegationMode>;

/** One `session_create_sub` call of an input's turns, and what became of its answer. */
export const Delegation = z.object({
  callId: z.string(),
  sessionId: z.string(),
  /** The sub-session's input seq it was handed, when it said. */
  childSeq: z.number().int().nullable(),
  mode: DelegationMode,
  /** Workflow time of the hand-over; the `result` update's wait for the answer counts from it. */
  at: z.number(),
  /**
   * `waiting` for the answer; `answered`: in, follow-up turn to run; `followed-up`: a follow-up turn
   * acted on it; `recorded`: in (notify); `moved-on`: it came after a newer input was bound, recorded only.
   */
  status: z.enum(['waiting', 'answered', 'followed-up', 'recorded', 'moved-on']),
  reply: SubSessionAnswer.nullable(),
  /** Why an answer was recorded and not acted on; null otherwise. */
  note: z.string().nullable(),
});
export type Delegation = z.infer<typeof Delegation>;

/** One `session_create_sub` call to a remote A2A agent: its answer is the call's result. */
export const RemoteSubSession = z.object({
  callId: z.string(),
  agent: z.string(),
  /** Workflow time of the call. */
  at: z.number(),
  outcome: z.enum(['answered', 'failed']),
});
export type RemoteSubSession = z.infer<typeof RemoteSubSession>;

export const DecisionRecord = z.object({
  seq: z.number().int(),
  messageId: z.string(),
  decision: Decision,
  scores: z.object({ phase: z.number(), session: z.number() }).nullable(),
  bands: z.object({ phase: z.string(), session: z.string() }).nullable(),
  degraded: z.string().nullable(),
  diff: CapabilityDiff.nullable(),
  /** Ids the orchestrator returned that were neither candidates nor current capabilities. */
  dropped: z.array(z.string()),
  /** Helper-model failures that fell back without changing the decision (extraction, recall, ...). */
  fallbacks: z.array(z.string()),
  stages: z.array(StageRecord),
  agent: AgentOutcome.nullable(),
  /** Where an out-of-scope input was handed (added after schemaVersion 1 shipped; defaults keep old state valid). */
  route: z
    .object({
      to: z.string().nullable(),
      via: z.enum(['parent', 'existing-sub', 'new-sub', 'none']),
      note: z.string(),
      /** The sub-session's reply once it came back (`subSessionReply`); null until then. */
      reply: SubSessionAnswer.nullable().default(null),
    })
    .nullable()
    .default(null),
  /** Tokens, latency and cost of the input's model calls, per role and in all; null when it made none. */
  usage: UsageTotals.nullable().default(null),
  /**
   * The agent's first step started beside the relevance call (workflows/agent/speculation.ts): `adopted`
   * when it became the turn's first step, `discarded` when it was not used (`reason` says why).
   * Absent when the input had no speculative step.
   */
  speculation: z.object({ outcome: z.enum(['adopted', 'discarded']), reason: z.string().nullable() }).optional(),
  /** The input's `session_create_sub` calls and their answers (absent when it delegated nothing). */
  delegations: z.array(Delegation).optional(),
  /**
   * A sub-session's answer to its parent for this input is held until its own collaborating
   * delegations are acted on (or it moves on); true while held. Absent otherwise.
   */
  answerHeld: z.boolean().optional(),
  /** The goal changes this input made (old and new statement); absent when it changed none. */
  goals: z.array(GoalChange).optional(),
  /** The input's `session_create_sub` calls to remote A2A agents; absent when it made none. */
  remote: z.array(RemoteSubSession).optional(),
});
export type DecisionRecord = z.infer<typeof DecisionRecord>;

/** A task input that was accepted and waits for the main loop. */
export const PendingInput = z.object({
  seq: z.number().int().positive(),
  messageId: z.string(),
  text: z.string(),
  resources: z.array(ResourceRef),
  from: Sender.nullable(),
  receivedAt: z.number(),
  via: z.enum(['signal', 'update']),
  /** Set when another Session handed this input over (added after schemaVersion 1 shipped). */
  routed: z
    .object({ fromSessionId: z.string(), reason: HandOverReason, seq: z.number().int().optional() })
    .nullable()
    .default(null),
  /** The delegating agent's note beside a handed-over message; null otherwise. */
  note: z.string().nullable().default(null),
  /**
   * The signature vouching for `from`, until the input is bound and checked (signed control). Absent
   * rather than null when unsigned, so an unsigned input weighs on the queue's share as before.
   */
  signature: ControlSignature.optional(),
  /**
   * Workflow time at which the Session checked `from`, `routed` and `note` against the signature, when
   * it did so on arrival (runs with `claims-on-arrival`): they are the verified values and the
   * signature is gone. Absent when the input claimed nothing or is checked when it is bound.
   */
  claimsCheckedAt: z.number().optional(),
  /**
   * Set when the input arrived while the turn of input `turn` ran and asked to `merge` into it or to
   * `interrupt` it (`whileBusy`). `merged` says, once judged at the turn's next step boundary, whether
   * it joined that turn (true) or stayed queued (false). Absent for an input that simply waited.
   */
  busy: z
    .object({ mode: z.enum(['merge', 'interrupt']), turn: z.number().int(), merged: z.boolean().optional() })
    .optional(),
});
export type PendingInput = z.infer<typeof PendingInput>;

/** What a message's signature vouched for when it was checked: the claims that held, the others dropped. */
export type VerifiedClaims = Pick<PendingInput, 'from' | 'routed' | 'note'>;

/** A bound input: the raw message as a fact, plus what the Session made of it. */
export const BoundInput = PendingInput.extend({
  boundAt: z.number(),
  phaseIndex: z.number().int(),
  decision: Decision.nullable(),
  reply: z.string().nullable(),
});
export type BoundInput = z.infer<typeof BoundInput>;

/** An MCP resource a tool result linked or embedded (activities/run-tool.ts). */
export const ToolResource = z.object({
  uri: z.string(),
  title: z.string().optional(),
  mimeType: z.string().optional(),
});
export type ToolResource = z.infer<typeof ToolResource>;

/** Where one call of the current step stands while the turn carries it out. */
export const PendingCall = ResolvedToolCall.extend({
  state: z.enum(['new', 'waiting-approval', 'approved', 'waiting-result', 'done']),
  /** When the call started waiting for an approval or an external result. */
  requestedAt: z.number().nullable(),
  /** The result the model will see, once known. */
  output: z.string().nullable(),
  result: ToolCallStatus.nullable(),
  /** The answer to its approval, once given (added in schemaVersion 2). */
  approval: ApprovalRecord.nullable().default(null),
  /** Resources its result linked or embedded, kept until the step is sealed into artifacts. */
  resources: z.array(ToolResource).optional(),
  /** The model's arguments when an approval edited them; `arguments` is then the approved edit. */
  originalArguments: z.string().nullable().default(null),
  /** Who edited the arguments, as the approval named them. */
  editedBy: z.string().nullable().default(null),
});
export type PendingCall = z.infer<typeof PendingCall>;

/**
 * The business agent's turn in progress. It is workflow state, so a turn waiting for an approval or
 * an external tool result survives worker and server restarts and continue-as-new.
 */
export const ActiveTurn = z.object({
  seq: z.number().int(),
  /** The input's decision record, finished when the turn ends. */
  record: DecisionRecord,
  /** Who sent the input (user-scoped memories belong to them). */
  from: Sender.nullable(),
  steps: z.number().int().nonnegative(),
  /** The step whose tool calls are being carried out, in the model's order. */
  step: z
    .object({
      text: z.string().nullable(),
      calls: z.array(PendingCall),
      /** The model's reasoning beside the calls, kept for providers that want it back (absent otherwise). */
      reasoning: z.string().optional(),
    })
    .nullable(),
  /** The last failing call (tool and arguments) and how many times in a row it failed. */
  failing: z.object({ key: z.string(), count: z.number().int() }).nullable(),
  interrupted: z.boolean(),
  /** The messageId of the input that interrupted the turn (`whileBusy: interrupt`); absent for a command. */
  interruptedBy: z.string().optional(),
  /**
   * What the agent's `capabilities_search` calls found in this turn, the only capabilities
   * `capabilities_load` may add (absent until the first search).
   */
  found: z.object({ skills: z.array(Cap), toolsets: z.array(Cap), memories: z.array(Cap) }).optional(),
  /**
   * A follow-up turn of an input whose turn has ended, run because a collaborating sub-session
   * answered: its record replaces the input's record in `decisions` when it ends. Absent otherwise.
   */
  followUp: z.boolean().optional(),
});
export type ActiveTurn = z.infer<typeof ActiveTurn>;

export const Phase = z.object({
  index: z.number().int().nonnegative(),
  goal: Goal,
  startedAtSeq: z.number().int(),
  endedAtSeq: z.number().int().nullable(),
  /** Compaction state of the phase once it has ended. */
  compaction: z.enum(['open', 'compacted', 'failed', 'skipped']),
  summary: z.string().nullable(),
});
export type Phase = z.infer<typeof Phase>;

export const Rejection = z.object({
  at: z.number(),
  via: z.string(),
  messageId: z.string().nullable(),
  reason: z.string(),
});
export type Rejection = z.infer<typeof Rejection>;

/** An out-of-scope request, preserved verbatim for responsibility routing. */
export const OutOfScopeRequest = z.object({
  seq: z.number().int(),
  messageId: z.string(),
  text: z.string(),
  resources: z.array(ResourceRef),
  from: Sender.nullable(),
  status: z.enum(['pending', 'routed', 'failed']),
  routedTo: z.string().nullable(),
  note: z.string().nullable(),
});
export type OutOfScopeRequest = z.infer<typeof OutOfScopeRequest>;

/** A sub-session this Session created, with the goal it was created for (its first task input). */
export const ChildSession = z.object({
  sessionId: z.string(),
  goal: z.string(),
  createdAtSeq: z.number().int(),
  lastRoutedSeq: z.number().int(),
  routed: z.number().int(),
  /** `working` while a handed-over input waits for its reply; `idle` once every one was answered. */
  status: z.enum(['working', 'idle']).default('idle'),
  /** Handed-over inputs not answered yet. */
  awaiting: z.number().int().nonnegative().default(0),
  /** The latest reply that came back (text clipped), or null before the first. */
  lastReply: SubSessionAnswer.nullable().default(null),
});
export type ChildSession = z.infer<typeof ChildSession>;

/** Where an artifact came from: an MCP resource, a path or URI in a result's structured content, or a written-to argument. */
export const ARTIFACT_SOURCES = ['resource', 'result', 'argument'] as const;

/**
 * Something a tool call produced or named: a file path, a URI, an MCP resource. Artifacts are what the
 * Session has done (goals say what it is for); the agent sees them in every request, and a phase's
 * hand-off summary refers to them (workflows/agent/artifacts.ts collects them when a step is sealed).
 */
export const Artifact = z.object({
  /** The path or URI as the tool gave it: the key, so a newer call naming the same one replaces the entry. */
  uri: z.string(),
  /** `file` (a path or file: URI), `uri` (any other URI), `resource` (an MCP resource). */
  kind: z.enum(['file', 'uri', 'resource']),
  source: z.enum(ARTIFACT_SOURCES),
  tool: z.string(),
  callId: z.string(),
  /** The input whose turn made the call, and the phase it belonged to. */
  seq: z.number().int(),
  phaseIndex: z.number().int(),
  title: z.string().nullable(),
  mimeType: z.string().nullable(),
});
export type Artifact = z.infer<typeof Artifact>;

/** Approval decisions, tool results, notifications, commands and sub-session replies: recorded, never task inputs. */
export const ControlEvent = z.object({
  at: z.number(),
  kind: z.enum(['approval', 'toolResult', 'notification', 'command', 'subSessionReply']),
  id: z.string(),
  summary: z.string(),
});
export type ControlEvent = z.infer<typeof ControlEvent>;

/** One signed kind's replay window: accepted MACs with their `expiresAt`, and the floor below which any signature is refused. */
export const ReplayWindowOfKind = z.object({
  /** `[mac, expiresAt]`, soonest to expire first. */
  macs: z.array(z.tuple([z.string(), z.number()])),
  /** The latest `expiresAt` pushed out of a full window: a signature expiring no later may be a replay. */
  floor: z.number(),
});
export type ReplayWindowOfKind = z.infer<typeof ReplayWindowOfKind>;

export const SessionState = z.object({
  schemaVersion: z.literal(SCHEMA_VERSION),
  sessionId: z.string(),
  parentSessionId: z.string().nullable(),
  /** Depth in the Session tree: 0 for a top-level Session, the parent's + 1 for a sub-session. */
  depth: z.number().int().nonnegative().default(0),
  profile: z.string(),
  settings: Settings,
  status: z.enum(['active', 'paused', 'closed']),
  goals: z.object({ session: Goal.nullable(), phase: Goal.nullable() }),
  capabilities: Capabilities,
  phases: z.array(Phase),
  /** The seq the next accepted input gets. Gap-free and increasing across continue-as-new. */
  nextSeq: z.number().int().positive(),
  /** Seq of the last input the main loop bound (0 before the first). */
  boundSeq: z.number().int().nonnegative(),
  queue: z.array(PendingInput),
  /**
   * De-duplication keys of the most recently bound inputs with their seq, oldest first (intake.ts).
   * Queued inputs are de-duplicated from the queue itself, so a backlog never pushes ids out. As
   * carried; during a run the window lives in intake's index and this list is empty until the state
   * is carried (workflows/run/carried.ts writes it back).
   */
  recent: z.array(z.tuple([z.string(), z.number().int()])),
  history: z.array(BoundInput),
  decisions: z.array(DecisionRecord),
  rejections: z.array(Rejection),
  outOfScope: z.array(OutOfScopeRequest),
  /** Sub-sessions created by this Session (independent workflows linked by parentSessionId). */
  children: z.array(ChildSession).default([]),
  controlEvents: z.array(ControlEvent),
  /** Recent ids of approvals, tool results, notifications and commands, for at-least-once delivery. */
  recentControl: z.array(z.string()),
  /** The business agent's transcript: user inputs, replies, tool steps and summaries, oldest first. */
  transcript: z.array(TranscriptItem).default([]),
  /** What tool calls produced or named, oldest first, one entry per uri (added without a schema bump: it defaults). */
  artifacts: z.array(Artifact).default([]),
  /** Changes of the loaded capabilities, newest last, by orchestration or the agent (added without a schema bump). */
  capabilityRevisions: z.array(CapabilityRevision).default([]),
  /** Every change of the goals, newest last: first task, new phase, refinement, approved proposal, command. */
  goalHistory: z.array(GoalChange).default([]),
  /** Settings the worker's caps changed, newest last (workflows/run/setting-caps.ts). */
  settingsClamped: z.array(SettingClamp).default([]),
  /** The newest durable events, oldest first (contract/events.ts; workflows/ledger/events.ts appends). */
  events: z.array(SessionEvent).default([]),
  /** The agent turn in progress, if any. No new input is bound while it is set. */
  turn: ActiveTurn.nullable().default(null),
  counts: z.object({
    accepted: z.number().int(),
    duplicates: z.number().int(),
    rejected: z.number().int(),
    /** Rejections by cause: `invalid`, `queue-full`, `closed`, `unknown-id` (added in schemaVersion 2). */
    rejectedBy: z.record(z.string(), z.number().int()).default({}),
    bound: z.number().int(),
    controlEvents: z.number().int(),
    byDecision: z.record(z.string(), z.number().int()),
  }),
  /** How many runs this Session has had (1 + continue-as-new count). */
  run: z.number().int().positive(),
  /** Tokens, latency and cost of every model call the Session recorded, per role and in all. */
  usage: UsageTotals.default(emptyTotals),
  /** Id parts of the last event appended, even when the log was trimmed: ids never repeat. */
  lastEvent: z.tuple([z.number().int(), z.number().int()]).nullable().default(null),
  /**
   * MACs of accepted signed control, per signed kind, kept until they expire, so a signed item is
   * applied at most once (workflows/control/replay-window.ts). Only signed-and-accepted items enter
   * it, so unsigned traffic cannot push a MAC out. Added without a schema bump: it defaults.
   */
  replayWindow: z.record(z.string(), ReplayWindowOfKind).default({}),
});
export type SessionState = z.infer<typeof SessionState>;

/** The SessionState fields that hold lists. */
export type CarriedListName = {
  [K in keyof SessionState]-?: SessionState[K] extends unknown[] ? K : never;
}[keyof SessionState];

/** How one list of SessionState is bounded. */
export interface CarriedList {
  /**
   * Most items kept, cut oldest-first where items are added: a number (it becomes `LIMITS[name]`),
   * the Settings field that sets it, or null when only its byte share bounds it.
   */
  readonly count: number | 'keepDecisions' | 'dedupeWindow' | null;
  /** Its share of the carried state in bytes (it becomes `BUDGET[name]`). */
  readonly bytes: number;
  /**
   * How the share holds: `trim` drops the oldest items in enforceBudget; `index` drops them where
   * items are added, keeping the de-duplication index in step; `refuse` refuses new items instead.
   */
  readonly share: 'trim' | 'index' | 'refuse';
  /**
   * Its place in the carried-state cap's trim order (workflows/run/carried.ts; the lowest is given up first),
   * and the newest items that step keeps. Null: never trimmed to fit, it is promised work.
   */
  readonly cap: { readonly rank: number; readonly keep: number } | null;
}

const KiB = 1024;
/**
 * Every list SessionState carries, in the schema's field order, which is also the order of a new
 * Session's empty lists (workflows/run/state.ts). Limits, byte shares, the cap's trim order and the
 * initial state are derived from this table: a new list is one row here plus its schema field.
 */
export const CARRIED_LISTS = {
  phases: { count: 20, bytes: 64 * KiB, share: 'trim', cap: { rank: 5, keep: 1 } },
  /** Pending inputs, resources included. Beyond the share new inputs are refused ("queue is full"). */
  queue: { count: null, bytes: 640 * KiB, share: 'refuse', cap: null },
  /** Ids of recently bound inputs, for de-duplication. */
  recent: { count: 'dedupeWindow', bytes: 128 * KiB, share: 'index', cap: { rank: 10, keep: 0 } },
  history: { count: 30, bytes: 128 * KiB, share: 'trim', cap: { rank: 1, keep: 0 } },
  decisions: { count: 'keepDecisions', bytes: 192 * KiB, share: 'trim', cap: { rank: 2, keep: 0 } },
  rejections: { count: 20, bytes: 16 * KiB, share: 'trim', cap: { rank: 7, keep: 0 } },
  outOfScope: { count: 50, bytes: 64 * KiB, share: 'trim', cap: { rank: 4, keep: 0 } },
  children: { count: 50, bytes: 32 * KiB, share: 'trim', cap: { rank: 9, keep: 0 } },
  controlEvents: { count: 50, bytes: 24 * KiB, share: 'trim', cap: { rank: 6, keep: 0 } },
  recentControl: { count: 500, bytes: 48 * KiB, share: 'trim', cap: { rank: 8, keep: 0 } },
  /** Bounded by bytes alone; the agent's context window compacts it further (workflows/agent/context-window.ts). */
  transcript: { count: null, bytes: 192 * KiB, share: 'trim', cap: { rank: 3, keep: 0 } },
  /**
   * Tool-made artifacts, one per uri. Given up late by the cap (they are what the Session has done),
   * but before the de-duplication window (a rank between theirs), and the newest few always stay.
   */
  artifacts: { count: 100, bytes: 48 * KiB, share: 'trim', cap: { rank: 9.5, keep: 10 } },
  /** Capability changes (orchestration and the agent's loads); small, given up late. */
  capabilityRevisions: { count: 50, bytes: 24 * KiB, share: 'trim', cap: { rank: 10.5, keep: 5 } },
  /** Goal changes; small, and what the Session was for, so given up late. */
  goalHistory: { count: 50, bytes: 24 * KiB, share: 'trim', cap: { rank: 10.7, keep: 5 } },
  /** At most one entry per capped setting and run; tiny, so given up last. */
  settingsClamped: { count: 20, bytes: 4 * KiB, share: 'trim', cap: { rank: 11, keep: 0 } },
  /** The durable event log a reconnecting subscriber resumes from; the oldest go first. */
  events: { count: 300, bytes: 96 * KiB, share: 'trim', cap: { rank: 0, keep: 0 } },
} as const satisfies Record<CarriedListName, CarriedList>;

type Rows = typeof CARRIED_LISTS;
type Counted = { [K in keyof Rows as Rows[K]['count'] extends number ? K : never]: Rows[K]['count'] };

/** The rows of CARRIED_LISTS, in table order. */
export const CARRIED_LIST_ROWS = Object.entries(CARRIED_LISTS) as ReadonlyArray<[CarriedListName, CarriedList]>;

/** Bounds on the lists inside SessionState that settings do not govern, and two more counts. */
export const LIMITS = {
  ...(Object.fromEntries(
    CARRIED_LIST_ROWS.flatMap(([name, row]) => (typeof row.count === 'number' ? [[name, row.count]] : [])),
  ) as Counted),
  /** Most recent sub-sessions scored when routing one out-of-scope request. */
  routingCandidates: 5,
  /** Reply characters kept per bound input. */
  replyChars: 8_000,
  /** Characters of a sub-session's last reply kept in the parent's `children` entry. */
  childReplyChars: 500,
} as const;

/** Keeps the newest `limit` items of a list in place. */
export function keepLast<T>(list: T[], limit: number): void {
  if (list.length > limit) list.splice(0, list.length - limit);
}
