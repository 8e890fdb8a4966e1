/**
 * Wire payloads of the `session` workflow. One zod schema per message; the same schemas validate
 * inside the workflow, in the client, and produce the published JSON Schema.
 *
 * Pure module: safe to import from workflow code.
 */
import { z } from 'zod';
import { Budget } from './usage.js';
import { ControlSignature } from './control-signature.js';

/** Longest accepted message text, in characters. Large material belongs in resources, not in text. */
export const MAX_TEXT_CHARS = 16_000;
/** Most resource references one message may carry. */
export const MAX_RESOURCES = 32;

const id = (what: string) =>
  z
    .string({ error: `${what} must be a string` })
    .trim()
    .min(1, `${what} must not be empty`)
    .max(200, `${what} must be at most 200 characters`);

/** Session ids become part of the workflow id `session:<sessionId>`, so they are kept URL- and CLI-safe. */
export const SessionId = z
  .string({ error: 'sessionId must be a string' })
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/,
    'sessionId must be 1-128 characters of letters, digits, ".", "_" or "-"',
  );
export type SessionId = z.infer<typeof SessionId>;

export const ResourceRef = z
  .object({
    uri: z.string().trim().min(1, 'resource uri must not be empty').max(2048),
    title: z.string().max(500).optional(),
    mimeType: z.string().max(200).optional(),
  })
  .strict();
export type ResourceRef = z.infer<typeof ResourceRef>;

export const Sender = z
  .object({
    kind: z.enum(['user', 'session']),
    id: z.string().max(200).optional(),
  })
  .strict();
export type Sender = z.infer<typeof Sender>;

/** Why another Session handed an input over. */
export const HandOverReason = z.enum(['out-of-scope', 'delegated']);
export type HandOverReason = z.infer<typeof HandOverReason>;

/** The only task input: signal `message` and update `submit`. */
/**
 * What a Session does with a message that arrives while an agent turn runs (`Settings.whileBusy`, or
 * per message): `enqueue` it behind the turn (the default), `merge` it into the running turn at its
 * next step boundary (relevance still judges it; a new phase or an out-of-scope request is enqueued
 * instead), `interrupt` the turn (it ends `interrupted`, running tool calls finish, then the message
 * starts a turn), or `reject` it (a recorded refusal; a `submit` fails with `SessionBusy`).
 */
export const WHILE_BUSY = ['enqueue', 'merge', 'interrupt', 'reject'] as const;
export const WhileBusy = z.enum(WHILE_BUSY);
export type WhileBusy = z.infer<typeof WhileBusy>;

export const MessageInput = z
  .object({
    messageId: id('messageId'),
    text: z
      .string({ error: 'text must be a string' })
      .refine((t) => t.trim().length > 0, 'text must not be empty')
      .refine((t) => t.length <= MAX_TEXT_CHARS, `text must be at most ${MAX_TEXT_CHARS} characters`),
    // null is accepted as absent: Temporal's HTTP API turns an empty array into null.
    resources: z.array(ResourceRef).max(MAX_RESOURCES).nullish(),
    from: Sender.nullish(),
    /**
     * Set when another Session handed this input over: out of its scope, or delegated by its agent.
     * `seq` is the input of the sending Session it came from; the receiver's reply to it goes back
     * there (`subSessionReply`).
     */
    routed: z
      .object({ fromSessionId: SessionId, reason: HandOverReason, seq: z.number().int().positive().optional() })
      .strict()
      .nullish(),
    /**
     * The delegating agent's own words beside a handed-over message (the text stays the user's,
     * verbatim). Shown to the receiving Session's agent as a labelled note, never judged as the task.
     */
    note: z.string().max(MAX_TEXT_CHARS, `note must be at most ${MAX_TEXT_CHARS} characters`).nullish(),
    /** Vouches for `from` when the worker requires signed control (contract/control-signature.ts). */
    signature: ControlSignature.optional(),
    /** What to do if a turn runs when this message arrives; overrides the Session's `whileBusy` setting. */
    whileBusy: WhileBusy.optional(),
  })
  .strict();
export type MessageInput = z.infer<typeof MessageInput>;

/**
 * A sub-session's answer to an input its parent handed over (update `subSessionReply`, sent by the
 * sub-session's `answerParent` activity). A bypass input: it never goes through relevance and never
 * becomes a task input. De-duplicated by (sessionId, seq), so a re-delivered answer changes nothing.
 */
export const SubSessionReply = z
  .object({
    /** The answering sub-session. */
    sessionId: SessionId,
    /** Its input seq the reply belongs to. */
    seq: z.number().int().positive(),
    /** The parent's input seq the handed-over message came from, when the hand-over carried it. */
    parentSeq: z.number().int().positive().nullable(),
    /** The handed-over messageId, as the parent sent it. */
    messageId: id('messageId'),
    reason: HandOverReason,
    /** How the sub-session's agent turn ended. */
    outcome: z.enum(['replied', 'interrupted', 'guarded', 'failed', 'skipped', 'budget-exceeded']),
    /** The sub-session's reply text; null when its turn ended without one. */
    reply: z.string().max(MAX_TEXT_CHARS).nullable(),
    /** Why the turn ended without a reply; null when it replied. */
    why: z.string().max(2_000).nullable(),
    /**
     * The answering worker's signature over the reply for the parent's Session id (its first
     * HARNESS_CONTROL_KEYS key); required when the parent's worker has control keys.
     */
    signature: ControlSignature.optional(),
  })
  .strict();
export type SubSessionReply = z.infer<typeof SubSessionReply>;

/** What `subSessionReply` answers: whether the parent took the reply or had already seen it. */
export const SubSessionReplyResult = z.object({ accepted: z.boolean(), duplicate: z.boolean() });
export type SubSessionReplyResult = z.infer<typeof SubSessionReplyResult>;

/** How a Session recorded a message: its seq, and whether it had seen the messageId before. `submit` answers it. */
export const Recorded = z.object({ seq: z.number().int().positive(), duplicate: z.boolean() });
export type Recorded = z.infer<typeof Recorded>;

/**
 * An answer to one tool call waiting for approval. `approvalId` is the waiting call's own id as
 * `snapshot().pendingApprovals` shows it (`<seq>:<step>:<callId>`); `argumentsHash`, when given,
 * must be that entry's hash of the arguments the approver saw (the model's, also when `arguments`
 * edits them). `approver` says who answered; it is recorded with the call (trusted as sent unless
 * control signing is configured).
 */
export const ApprovalInput = z
  .object({
    approvalId: id('approvalId'),
    approved: z.boolean(),
    note: z.string().max(4000).optional(),
    argumentsHash: z
      .string()
      .regex(/^[0-9a-f]{64}$/, 'argumentsHash must be 64 lowercase hex digits (SHA-256 of the arguments)')
      .optional(),
    approver: id('approver').optional(),
    /**
     * Approve with these arguments instead of the model's (a JSON object as text). The worker checks
     * them against the tool's input schema and the approval policy first; a refused edit leaves the
     * call waiting. The call keeps the model's arguments as `originalArguments`. Approvals only.
     */
    arguments: z.string().max(MAX_TEXT_CHARS, `arguments must be at most ${MAX_TEXT_CHARS} characters`).optional(),
    /** Required when the worker has control keys (contract/control-signature.ts). */
    signature: ControlSignature.optional(),
  })
  .strict();
export type ApprovalInput = z.infer<typeof ApprovalInput>;

/** What the `approve` update answers once the approval applied. */
export const ApprovalResult = z.object({ approvalId: z.string(), approved: z.boolean() });
export type ApprovalResult = z.infer<typeof ApprovalResult>;

/** What the `answerTool` update answers once the tool result reached its waiting call. */
export const ToolResultAnswer = z.object({ callId: z.string() });
export type ToolResultAnswer = z.infer<typeof ToolResultAnswer>;

/**
 * The result of an external tool call. `resultId` names the waiting call as
 * `snapshot().pendingToolCalls` shows it (`<seq>:<step>:<callId>`), as an approval's `approvalId`
 * does: a result that carries it answers only that call. Under signed control it is required (and
 * inside the MAC), so a signed result can never answer a later call that reuses the call id.
 */
export const ToolResultInput = z
  .object({
    callId: id('callId'),
    resultId: id('resultId').optional(),
    output: z.unknown(),
    isError: z.boolean().optional(),
    signature: ControlSignature.optional(),
  })
  .strict()
  .refine((v) => v.output !== undefined, { message: 'output is required', path: ['output'] });
export type ToolResultInput = z.infer<typeof ToolResultInput>;

export const NotificationInput = z
  .object({ notificationId: id('notificationId'), kind: id('kind'), text: z.string().max(MAX_TEXT_CHARS) })
  .strict();
export type NotificationInput = z.infer<typeof NotificationInput>;

export const GoalsPatch = z
  .object({
    session: z.string().trim().min(1).max(MAX_TEXT_CHARS).optional(),
    phase: z.string().trim().min(1).max(MAX_TEXT_CHARS).optional(),
  })
  .strict()
  .refine((g) => g.session !== undefined || g.phase !== undefined, 'give at least one of session, phase');
export type GoalsPatch = z.infer<typeof GoalsPatch>;

/**
 * The `set-budget` command's arguments: each limit given replaces the Session's, `null` removes it
 * (unlimited, up to the worker's maximum); limits left out stay as they are.
 */
export const BudgetPatch = z
  .object({
    turnTokens: Budget.shape.turnTokens.unwrap().nullable().optional(),
    sessionTokens: Budget.shape.sessionTokens.unwrap().nullable().optional(),
    turnCostUsd: Budget.shape.turnCostUsd.unwrap().nullable().optional(),
    sessionCostUsd: Budget.shape.sessionCostUsd.unwrap().nullable().optional(),
  })
  .strict()
  .refine(
    (b) => Object.keys(b).length > 0,
    'give at least one of turnTokens, sessionTokens, turnCostUsd, sessionCostUsd',
  );
export type BudgetPatch = z.infer<typeof BudgetPatch>;

const commandBase = { commandId: id('commandId'), signature: ControlSignature.optional() };
const noArgs = z.object({}).strict().optional();

/** Deterministic commands. They bypass the relevance path and never become task inputs. */
export const CommandInput = z.discriminatedUnion(
  'name',
  [
    z.object({ ...commandBase, name: z.literal('set-goals'), args: GoalsPatch }).strict(),
    z.object({ ...commandBase, name: z.literal('pause'), args: noArgs }).strict(),
    z.object({ ...commandBase, name: z.literal('resume'), args: noArgs }).strict(),
    z.object({ ...commandBase, name: z.literal('close'), args: noArgs }).strict(),
    z.object({ ...commandBase, name: z.literal('interrupt'), args: noArgs }).strict(),
    z.object({ ...commandBase, name: z.literal('set-budget'), args: BudgetPatch }).strict(),
  ],
  { error: 'name must be one of set-goals, pause, resume, close, interrupt, set-budget' },
);
export type CommandInput = z.infer<typeof CommandInput>;

export const Thresholds = z
  .object({ high: z.number().min(0).max(1), low: z.number().min(0).max(1) })
  .strict()
  .refine((t) => t.low < t.high, 'thresholds.low must be below thresholds.high');
export type Thresholds = z.infer<typeof Thresholds>;

/** The thresholds a Session uses unless its start argument sets others. */
export const DEFAULT_THRESHOLDS: Thresholds = { high: 0.65, low: 0.35 };

/** Per-session settings, fixed at start and carried across continue-as-new. */
export const Settings = z
  .object({
    thresholds: Thresholds.default(DEFAULT_THRESHOLDS),
    /** Per-attempt budget of one helper-model call. */
    modelTimeoutMs: z.number().int().min(100).max(600_000).default(20_000),
    /**
     * Token and cost limits per turn (one input's processing) and per Session; unset is unlimited, up
     * to the worker's maximum. The `set-budget` command changes them.
     */
    budget: Budget.optional(),
    /** Per-attempt budget of the business-agent turn, which may legitimately take longer. */
    agentTimeoutMs: z.number().int().min(100).max(3_600_000).default(120_000),
    /** Attempts per helper-model call, retries included. Bounded so a dead model degrades, it does not stall. */
    modelAttempts: z.number().int().min(1).max(10).default(3),
    /** Continue-as-new after this many inputs in one run, even if Temporal has not suggested it yet. */
    continueAsNewAfter: z.number().int().min(1).max(10_000).default(500),
    /** How many recent messageIds are remembered for de-duplication (across continue-as-new). */
    dedupeWindow: z.number().int().min(10).max(10_000).default(2_000),
    /** How many decision records the `decisions` query keeps. */
    keepDecisions: z.number().int().min(1).max(1_000).default(100),
    /** Run the business-agent turn after alignment. */
    agentTurn: z.boolean().default(true),
    /** Model steps one agent turn may take before the loop guard ends it `guarded`. */
    maxAgentSteps: z.number().int().min(1).max(200).default(16),
    /** Times in a row the same tool call (tool and arguments) may fail before the loop guard trips. */
    maxRepeatedFailures: z.number().int().min(1).max(20).default(3),
    /** The agent request's budget for transcript bytes; older sealed items are compacted beyond it. */
    agentContextBytes: z.number().int().min(4_096).max(4_000_000).default(64_000),
    /**
     * Put the session goal in the SessionGoal search attribute. Off keeps user text out of
     * visibility, which no payload codec can encrypt (the client turns it off when it encrypts).
     */
    goalSearchAttribute: z.boolean().default(true),
    /** Task queue for model steps and tool calls, so a slow agent cannot starve relevance (default: the Session's). */
    agentTaskQueue: z.string().trim().min(1).max(200).optional(),
    /** Per-attempt budget of one tool call run by the worker (MCP or built-in). */
    toolTimeoutMs: z.number().int().min(100).max(3_600_000).default(120_000),
    /**
     * Queued inputs judged ahead (relevance only) while an earlier input's preparation and agent turn
     * run, against the goals its decision left. A goal change drops them; 0 = one input at a time.
     */
    relevanceLookahead: z.number().int().min(0).max(16).default(4),
    /**
     * On a continue-shaped Session (workflows/agent/speculation.ts), start the agent's first model step
     * beside the relevance call. Its tool calls run and its reply is released only once the decision
     * is `continue` and its request is the one the Session would have sent; otherwise it is discarded
     * and its tokens are counted as speculative. Off: the step waits for the decision.
     */
    speculativeAgentStep: z.boolean().default(true),
    /**
     * Close the Session after this long without input (nothing queued, no agent turn waiting).
     * 0 = never. Unset = the profile's default: never for top-level Sessions, 24 h for `sub-session`.
     * Sub-sessions inherit their parent's settings, so an explicit value applies to them too.
     */
    idleTimeoutMs: z
      .number()
      .int()
      .refine(
        (ms) => ms === 0 || (ms >= 1_000 && ms <= 365 * 24 * 3_600_000),
        'idleTimeoutMs must be 0 or 1000 ms to 365 days',
      )
      .optional(),
    /** Sub-sessions the agent may create with `session_create_sub` in one turn; more are tool errors. */
    maxSubSessionsPerTurn: z.number().int().min(0).max(20).default(3),
    /**
     * Capabilities the agent may load or unload with `capabilities_load` / `capabilities_unload` in one
     * turn; more are tool errors. 0 leaves the agent only `capabilities_search`.
     */
    maxCapabilityChangesPerTurn: z.number().int().min(0).max(20).default(4),
    /**
     * How deep the Session tree may grow: a top-level Session is depth 0, its sub-sessions 1. A
     * Session at this depth creates no sub-sessions (the agent gets a tool error, routing keeps the request).
     */
    maxSessionDepth: z.number().int().min(0).max(10).default(2),
    /**
     * How long the `result` update treats an out-of-scope input handed to a sub-session as pending,
     * waiting for the sub-session's reply, counted from the hand-over. After it the input is `done`
     * without a reply (the reply is still recorded when it comes).
     */
    subSessionReplyWaitMs: z.number().int().min(0).max(3_600_000).default(90_000),
    /** What a message that arrives while an agent turn runs does (WHILE_BUSY); a message may say otherwise. */
    whileBusy: WhileBusy.default('enqueue'),
  })
  .strict();
export type Settings = z.infer<typeof Settings>;
export type SettingsInput = z.input<typeof Settings>;

export const StartGoals = z
  .object({
    session: z.string().trim().min(1).max(MAX_TEXT_CHARS).optional(),
    phase: z.string().trim().min(1).max(MAX_TEXT_CHARS).optional(),
  })
  .strict();

/** The public start argument of workflow type `session`. */
export const SessionStart = z
  .object({
    sessionId: SessionId,
    parentSessionId: SessionId.optional(),
    profile: z.string().trim().min(1).max(100).optional(),
    goals: StartGoals.optional(),
    settings: Settings.partial().optional(),
    /** Depth in the Session tree: 0 (default) for a top-level Session; a sub-session gets its parent's + 1. */
    depth: z.number().int().min(0).max(100).optional(),
  })
  .strict();
export type SessionStart = z.infer<typeof SessionStart>;
