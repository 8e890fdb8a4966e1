/**
 * The workflow-activity contract: what each activity is given and what it must answer. Each role's
 * input allows exactly what that role may see. The output schemas are shared: model providers parse
 * model answers with them, and the workflow checks activity results with them before use.
 *
 * Pure module: safe to import from workflow code.
 */
import { z } from 'zod';
import {
  Recorded,
  SubSessionReplyResult,
  type HandOverReason,
  type MessageInput,
  type ResourceRef,
  type Settings,
  type SubSessionReply,
} from './messages.js';
import { TaskTerms, type RelevanceRequest, type RelevanceResult } from './relevance.js';
import { Handoff, type PhaseRecord } from './handoff.js';
import { Cap, ToolResource, type Artifact, type Decision } from './state.js';
import { PolicyDecision, ResolvedToolCall, type TranscriptItem } from './transcript.js';
import { ModelUsage, type BudgetCheck } from './usage.js';

/**
 * A model-call request with the Session's budget: what is spent and the Session's limits. Absent in
 * requests from Sessions started before budgets existed (docs/patches.md `model-budgets`).
 */
export type Budgeted<T> = T & { budget?: BudgetCheck };
/**
 * A model-call result with what the call used (tokens, model, latency, cost). Optional: results
 * recorded before accounting existed carry none, and a provider that reports nothing sends none.
 */
export type Metered<T> = T & { usage?: ModelUsage };
import type { WorkerPolicy } from './worker-policy.js';
import type { ControlSignature, SignedKind } from './control-signature.js';

export const Candidate = Cap.extend({ score: z.number() });
export type Candidate = z.infer<typeof Candidate>;

/** One list of `item` per capability kind. */
const perKind = <T extends z.ZodType>(item: T) =>
  z.object({ skills: z.array(item), toolsets: z.array(item), memories: z.array(item) });

/** Recall's answer: scored candidates per capability kind. */
export const Candidates = perKind(Candidate);
export type Candidates = z.infer<typeof Candidates>;

/**
 * The orchestrator's answer as received. A kind it leaves out (or sends as null) keeps its current capabilities: an
 * omission is not a selection, and nothing is cleared before a replacement has been selected.
 */
export const PartialSelection = z.object({
  skills: z.array(z.string()).nullish(),
  toolsets: z.array(z.string()).nullish(),
  memories: z.array(z.string()).nullish(),
});
export type PartialSelection = z.infer<typeof PartialSelection>;

/**
 * The extraction role's answer: retrieval terms, trimmed and de-duplicated, and the task statement
 * (null when the message states no task, as a greeting does). The Session checks the statement
 * (contract/goals.ts); absent from workers older than statements.
 */
export const ExtractionOutput = z.object({ terms: TaskTerms, goal: z.string().nullish().catch(undefined) });

/**
 * The orchestrator's answer: ids per kind; a kind left out keeps its current capabilities. An answer
 * with no kind at all is not a selection but a malformed answer: it must fall back visibly.
 */
export const OrchestrationOutput = PartialSelection.refine(
  (s) => s.skills != null || s.toolsets != null || s.memories != null,
  'expected at least one of skills, toolsets, memories',
);

/**
 * The compaction result as the workflow checks it: the summary text it keeps, and the structured
 * hand-off when the role gave one. Results recorded before hand-offs carry `summary` alone.
 */
export const CompactionOutput = z.object({ summary: z.string().trim().min(1), handoff: Handoff.optional() });

/**
 * The compaction model's answer, parsed leniently: a structured hand-off (`produced`, `decisions`,
 * `constraints`, `openQuestions`, `nextSteps`), a plain `{ summary }`, or both; null reads as absent.
 * models/prompts.ts compactionResult renders it with the phase goal from the request.
 */
export const CompactionAnswer = z
  .object({
    summary: z.string().trim().nullish(),
    produced: z.array(z.object({ what: z.string(), artifact: z.string().nullish() })).nullish(),
    decisions: z.array(z.string()).nullish(),
    constraints: z.array(z.string()).nullish(),
    openQuestions: z.array(z.string()).nullish(),
    nextSteps: z.array(z.string()).nullish(),
  })
  .refine(
    (a) =>
      Boolean(a.summary) || Object.entries(a).some(([key, value]) => key !== 'summary' && (value?.length ?? 0) > 0),
    'expected a summary or a structured hand-off',
  );
export type CompactionAnswer = z.infer<typeof CompactionAnswer>;

/** The task after alignment: the goals it now serves and the input that led there. */
export interface AlignedTask {
  sessionGoal: string;
  phaseGoal: string;
  message: string;
  resources: ResourceRef[];
}

export interface ExtractRequest {
  task: AlignedTask;
}
export type ExtractResult = z.infer<typeof ExtractionOutput>;

export interface RecallRequest {
  sessionId: string;
  /** Retrieval terms; empty when extraction failed, in which case `text` is searched instead. */
  terms: string[];
  text: string;
  userId?: string;
}

/** `capabilities_search`: the same recall as a phase's, by the agent's query. */
export interface CapabilitySearchRequest {
  sessionId: string;
  /** User-scoped memories are found only for the user who sent the turn's input. */
  userId?: string;
  query: string;
}

/** A capability the search found: a recall candidate and what the agent needs to choose it. */
export const FoundCapability = Candidate.extend({
  description: z.string(),
  /** A toolset's tool names. */
  tools: z.array(z.string()).optional(),
});
export type FoundCapability = z.infer<typeof FoundCapability>;

export const CapabilitySearchResult = perKind(FoundCapability);
export type CapabilitySearchResult = z.infer<typeof CapabilitySearchResult>;

export type OrchestrationMode = 'init' | 'reconcile';

export interface OrchestrateRequest {
  task: AlignedTask;
  mode: OrchestrationMode;
  current: { skills: Cap[]; toolsets: Cap[]; memories: Cap[] };
  candidates: Candidates;
}

/**
 * What the compaction role summarises: a finished phase's whole record (a hand-off: inputs, replies,
 * tool calls, artifacts), or, for a transcript window over budget, its oldest items as lines in
 * `inputs`. Requests recorded before hand-offs carry `phaseGoal` and `inputs` alone.
 */
export type CompactRequest = PhaseRecord;
export type CompactResult = z.infer<typeof CompactionOutput>;

// ---- the inner execution loop (agent steps and tool calls) ------------------------------------------

/**
 * One model step of the business agent. The workflow passes facts only; the activity assembles
 * the chat request afresh from them on every call (system prompt with goals and decision, earlier
 * phases' summaries, loaded skills' SKILL.md bodies, recalled memories, the transcript as
 * user/assistant/tool messages, and the loaded tools plus BUILTIN_TOOLS as OpenAI tools).
 */
export interface AgentStepRequest {
  sessionId: string;
  /**
   * Who sent the input the turn serves, when a user named themself: user-scoped memories are read
   * only for that user. Absent from workflows that predate the scope check (no user memory is read).
   */
  userId?: string;
  /**
   * Top-level Session or sub-session, for the worker's approval policy. Absent from workflows that
   * predate policies: rules that name a Session kind then do not match.
   */
  sessionKind?: SessionKind;
  goals: { session: string; phase: string };
  decision: Decision;
  summaries: Array<{ phaseIndex: number; goal: string; summary: string }>;
  /** The Session's artifacts, oldest first (absent from requests recorded before artifacts). */
  artifacts?: Artifact[];
  transcript: TranscriptItem[];
  skills: string[];
  toolsets: string[];
  memories: string[];
  /** The step's number within the turn (1-based), for logs and activity summaries. */
  step: number;
  /**
   * Whether the agent is offered `propose_goal_change`: in a `conflict` or `uncertain` turn and the
   * turn after, in Sessions with goal statements. Absent (not offered) otherwise.
   */
  offerGoalChange?: boolean;
  /** The Session's budget; a step over it is not sent to the model (`budget-exceeded`). */
  budget?: BudgetCheck;
  /**
   * Sent beside the relevance call, before the decision (workflows/agent/speculation.ts): the workflow may
   * still discard the answer, so nothing of it may reach the user until then. Its text deltas are
   * published marked `speculative`, and followers show them only once the decision is `continue`.
   * Not part of the request's identity: a speculative step stands in for the real one when all else
   * is equal.
   */
  speculative?: boolean;
  /**
   * The id of the Session's newest durable event when the step was sent (null before the first): its
   * text deltas follow that event (`<id>~<n>`). Not part of the request's identity either. Absent
   * only from requests of workflow code older than it; the step then asks the Session (`events`).
   */
  afterEvent?: string | null;
}
const usage = ModelUsage.optional();
export const AgentStepResult = z.discriminatedUnion('kind', [
  /** The model answered with text: the turn ends `replied`. */
  z.object({ kind: z.literal('reply'), text: z.string(), usage }),
  /** The model asked for tool calls, in its order, each resolved by the worker. */
  z.object({
    kind: z.literal('calls'),
    text: z.string().nullable(),
    calls: z.array(ResolvedToolCall).min(1),
    /**
     * The model's reasoning beside the calls (`reasoning_content`), returned only where the provider
     * profile requires it back within the tool loop (DeepSeek's thinking mode); it goes into the step's transcript item.
     */
    reasoning: z.string().optional(),
    usage,
  }),
  /** No agent model is configured (the offline provider has none): the turn ends `skipped`. */
  z.object({ kind: z.literal('skipped'), reason: z.string(), usage }),
  /** A budget is exhausted: no model was called, and the turn ends `budget-exceeded`. */
  z.object({ kind: z.literal('budget-exceeded'), reason: z.string() }),
]);
export type AgentStepResult = z.infer<typeof AgentStepResult>;

/** A Session started by a client (`top-level`) or by another Session (`sub-session`, it has a parent). */
export const SessionKind = z.enum(['top-level', 'sub-session']);
export type SessionKind = z.infer<typeof SessionKind>;

/** Runs one `mcp` call or the `memory_save` built-in on the worker. Heartbeats while it runs. */
export interface RunToolRequest {
  sessionId: string;
  /** User-scoped memories belong to whoever sent the input (memory_save with scope `user`). */
  userId?: string;
  callId: string;
  /** The input whose turn made the call; with sessionId and callId it names the call for good. */
  seq?: number;
  tool: string;
  toolset: string | null;
  /** Validated JSON text of the arguments. */
  arguments: string;
}
export const RunToolResult = z.object({
  output: z.string(),
  isError: z.boolean(),
  /** MCP resources the result links or embeds (`resource_link`, `resource`); absent from older workers. */
  resources: z.array(ToolResource).optional(),
});
export type RunToolResult = z.infer<typeof RunToolResult>;

/** `session_create_sub`: start a Session for an out-of-scope request and hand it the message verbatim. */
export interface CreateSubRequest {
  parentSessionId: string;
  taskQueue: string;
  profile: string;
  settings: Settings;
  /** The message handed over: the user's text and resources verbatim, the delegating agent's note beside them. */
  message: { messageId: string; text: string; resources: ResourceRef[]; note?: string };
  /** The parent's input seq the message came from; the sub-session's reply names it. */
  parentSeq?: number;
  /** The new Session's depth in the Session tree (the parent's + 1). */
  depth?: number;
  /** The request's key in the parent (its messageId, or origin and messageId if handed over): the sub-session id derives from it. */
  requestKey?: string;
  /** Why the message is handed over: routing of an out-of-scope request (default), or the agent's delegation. */
  reason?: HandOverReason;
}
/** The receiving Session's answer; `seq` and `duplicate` are absent from workers that predate hand-over by update. */
export const CreateSubResult = z.object({
  sessionId: z.string().min(1),
  seq: z.number().int().optional(),
  duplicate: z.boolean().optional(),
});
export type CreateSubResult = z.infer<typeof CreateSubResult>;

/** Hands a message to a running Session through `submit`, so a refusal is seen (`HandOverRefused`). */
export interface HandOverRequest {
  sessionId: string;
  message: MessageInput;
}
/** The receiving Session's answer to `submit`. */
export const HandOverResult = Recorded;
export type HandOverResult = Recorded;

/** Sends a sub-session's reply to its parent (update `subSessionReply`, de-duplicated by the parent). */
export interface AnswerParentRequest {
  /** The parent Session. */
  sessionId: string;
  reply: SubSessionReply;
}
export const AnswerParentResult = SubSessionReplyResult;
export type AnswerParentResult = SubSessionReplyResult;

/** Every activity the Session workflow schedules. */
export interface SessionActivities {
  /** The scores; with combined understanding (the worker's choice), the message's task terms as well. */
  relevance(request: Budgeted<RelevanceRequest>): Promise<Metered<RelevanceResult>>;
  extractTerms(request: Budgeted<ExtractRequest>): Promise<Metered<ExtractResult>>;
  recall(request: RecallRequest): Promise<Candidates>;
  /** The agent's `capabilities_search`: recall by its query, with what each candidate is. */
  searchCapabilities(request: CapabilitySearchRequest): Promise<CapabilitySearchResult>;
  orchestrate(request: Budgeted<OrchestrateRequest>): Promise<Metered<PartialSelection>>;
  compact(request: Budgeted<CompactRequest>): Promise<Metered<CompactResult>>;
  createSubSession(request: CreateSubRequest): Promise<CreateSubResult>;
  handOver(request: HandOverRequest): Promise<HandOverResult>;
  answerParent(request: AnswerParentRequest): Promise<AnswerParentResult>;
}

/**
 * `session_create_sub` with `agent`: the request sent to a configured remote A2A agent
 * (activities/remote-agent.ts). The message id is `<sessionId>:<seq>:<callId>`.
 */
export interface CallRemoteAgentRequest {
  sessionId: string;
  seq: number;
  callId: string;
  /** A name from the worker's `HARNESS_A2A_REMOTE_AGENTS`. */
  agent: string;
  text: string;
}

/** The inner loop's activities: one model step, one tool call. */
export interface AgentActivities {
  agentStep(request: AgentStepRequest): Promise<AgentStepResult>;
  runTool(request: RunToolRequest): Promise<RunToolResult>;
  /** A remote A2A agent's answer as the call's result (`isError` when it failed or was refused). */
  callRemoteAgent(request: CallRemoteAgentRequest): Promise<RunToolResult>;
}

/**
 * The business agent's single call, as Sessions made it before the agent loop. No worker runs it any
 * more; the workflow still schedules it when it replays a history recorded before `patched('agent-loop')`
 * (docs/patches.md), and replay never runs the activity.
 */
export interface AgentTurnRequest {
  sessionId: string;
  goals: { session: string; phase: string };
  decision: Decision;
  message: { text: string; resources: ResourceRef[] };
  skills: string[];
  toolsets: string[];
  memories: string[];
}
export const AgentTurnResult = z.union([z.object({ reply: z.string() }), z.object({ skipped: z.string() })]);
export type AgentTurnResult = z.infer<typeof AgentTurnResult>;
export interface RetiredActivities {
  agentTurn(request: AgentTurnRequest): Promise<AgentTurnResult>;
}

// ---- the worker's policy (local activities: their answers are markers, never re-asked on replay) ----

/** What the workflow asks the worker it runs on; the worker answers from its configuration. */
export interface PolicyActivities {
  /** The worker's caps on Session settings and whether control must be signed (key ids, never keys). */
  workerPolicy(): Promise<WorkerPolicy>;
  /**
   * Checks a signature's MAC with the worker's control keys (expiry and key id are checked by the
   * workflow). Asked by runs that began before `current-control-policy`, for signed items only.
   */
  verifyControl(request: VerifyControlRequest): Promise<VerifyControlResult>;
  /**
   * Judges one control item (signed or not) by the worker's configuration now: whether signing is
   * required, and if so whether the signature holds (a configured key id, not expired, no longer-lived
   * than the worker's maximum, the MAC). Asked by runs that began with `current-control-policy`.
   */
  checkControl(request: CheckControlRequest): Promise<ControlVerdict>;
}

export interface CheckControlRequest {
  kind: SignedKind;
  sessionId: string;
  /** The payload as signed: parsed by its schema, without `signature`. */
  payload: Record<string, unknown>;
  /** The `signature` field as sent (null when absent); the worker parses it. */
  signature: unknown;
  /** Workflow time of the check, epoch ms: expiry and lifetime are judged against it. */
  at: number;
}

/** The `checkControl` verdict: recorded as a marker, so a replay never asks the worker again. */
export const ControlVerdict = z.object({
  /** The worker required signed control when it checked (it had control keys). */
  required: z.boolean(),
  /** The item may be applied. */
  accepted: z.boolean(),
  /** The key id whose MAC matched; null when not signed-and-accepted. */
  keyId: z.string().nullable(),
  /** Why it was refused; null when accepted. */
  reason: z.string().nullable(),
});
export type ControlVerdict = z.infer<typeof ControlVerdict>;

export interface VerifyControlRequest {
  kind: SignedKind;
  sessionId: string;
  /** The payload as signed: parsed by its schema, without `signature`. */
  payload: Record<string, unknown>;
  signature: ControlSignature;
}
export const VerifyControlResult = z.object({ valid: z.boolean(), reason: z.string().nullable() });
export type VerifyControlResult = z.infer<typeof VerifyControlResult>;

/**
 * Checks an approver's edit of a waiting call's arguments where the tool's schema and the approval
 * policy live: on the worker. A local activity, so its verdict is a marker in history and a replay
 * never asks again (a schema or policy changed later never changes a past verdict).
 */
export interface ApprovalEditActivities {
  checkApprovalEdit(request: ApprovalEditRequest): Promise<ApprovalEditVerdict>;
}

export interface ApprovalEditRequest {
  sessionId: string;
  sessionKind: SessionKind;
  /** The Session's loaded toolsets: the tool is looked up among them as the agent step offered it. */
  toolsets: string[];
  tool: string;
  /** null for the built-ins. */
  toolset: string | null;
  /** The edited arguments (JSON object text). */
  arguments: string;
}

/** `refused` says why the edit may not run (schema, policy deny, unknown tool); null when it may. */
export const ApprovalEditVerdict = z.object({
  refused: z.string().nullable(),
  /** The policy rule that matched the edited call, if any (a `deny` is always refused). */
  policy: PolicyDecision.nullable(),
});
export type ApprovalEditVerdict = z.infer<typeof ApprovalEditVerdict>;
