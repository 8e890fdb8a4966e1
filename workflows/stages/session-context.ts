/** What the stages of an input need from the running Session. */
import type { SessionActivityProxies } from './activity-proxies.js';
import type { AgentStepRequest, AgentStepResult } from '../../contract/activity-contract.js';
import type { UsageMeter } from '../ledger/accounting.js';
import type { BoundInput, Decision, DecisionRecord, SessionState } from '../../contract/state.js';
import type { StageShow } from './stage-runner.js';

/** What a cancellable call is: a model call (a step, a compaction) or a tool call. */
export type CallKind = 'model' | 'tool';

export interface SessionContext {
  readonly state: SessionState;
  readonly activities: SessionActivityProxies;
  /** The task queue this Session runs on (sub-sessions start on it). */
  readonly taskQueue: string;
  /** Shows a stage in the Web UI's current details and reports the stages an input runs as events. */
  readonly show: StageShow;
  /** Whether the Session should continue as new now (a waiting turn parks for it). */
  readonly shouldContinueAsNew: () => boolean;
  /** Runs an activity call that an interrupt can cancel (control/control-plane.ts says which kind when). */
  readonly cancellable: <T>(kind: CallKind, fn: () => Promise<T>) => Promise<T>;
  /** Relevance judged ahead for queued inputs; null in Sessions started before it existed. */
  readonly lookahead: Lookahead | null;
  /** The agent's first step sent beside the relevance call on a continue-shaped Session (speculation.ts). */
  readonly speculation: Speculation;
  /** Patches asked at the run's start (session.ts) for behaviour that begins later in an input. */
  readonly patches: {
    readonly combinedUnderstanding: boolean;
    readonly compactionBeside: boolean;
    /** The agent's `capabilities_*` tools run in the Session (agent/capability-tools.ts), not by runTool. */
    readonly agentCapabilities: boolean;
    /** `session_create_sub` has a mode, and a collaborating sub-session's reply runs a follow-up turn (children/collaboration.ts). */
    readonly collaborating: boolean;
    /** Goals are task statements with a lifecycle (environment/goals.ts, agent/goal-tool.ts). */
    readonly goalStatements: boolean;
    /** `session_create_sub` may name a remote A2A agent (children/remote-agents.ts). */
    readonly remoteSubsessions: boolean;
  };
  /** Counts model usage toward the Session and the input being processed, and tells calls their budget. */
  readonly meter: UsageMeter;
}

type RelevanceScores = Awaited<ReturnType<SessionActivityProxies['relevance']>>;

/** Relevance judged ahead for queued inputs (understanding/lookahead.ts makes it). */
export interface Lookahead {
  /** Starts judgments for the first `relevanceLookahead` queued inputs that lack one for today's goals. */
  fill(): void;
  /**
   * The judgment started ahead for `seq` against exactly these goals, if any. Forgets `seq` either
   * way: a judgment against other goals is dropped, and the caller judges the input afresh.
   */
  take(seq: number, phaseGoal: string, sessionGoal: string): Promise<RelevanceScores> | undefined;
  /** The scores judged ahead for `seq` against exactly these goals, if that judgment has answered already. */
  answered(seq: number, phaseGoal: string, sessionGoal: string): RelevanceScores | undefined;
}

/** The agent's first step sent beside the relevance call (agent/speculation.ts makes it). */
export interface Speculation {
  /**
   * Sends the first step of `input`'s turn now, beside its relevance call, if the Session is
   * continue-shaped. `ahead` is the decision a judgment made ahead has already given, if any.
   */
  start(input: BoundInput, record: DecisionRecord, firstTask: boolean, ahead: Decision | null): void;
  /** The input's decision is known: anything but `continue` discards the step at once. */
  decided(decision: Decision): void;
  /**
   * The step sent ahead, if it may stand in for a step with `request`: a function to call inside the
   * caller's cancellation scope (an interrupt then cancels it) that answers as the real step would,
   * running the real step itself if the early one failed. Undefined when nothing stands in; a pending
   * step that may not is discarded.
   */
  adopt(request: AgentStepRequest): (() => Promise<AgentStepResult>) | undefined;
}
