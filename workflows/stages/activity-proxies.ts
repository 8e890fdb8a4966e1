/**
 * The Session's view of its activities: one proxy per role with its timeouts and retry policy, and
 * every result checked against the contract's schema before the workflow uses it, so a worker
 * running other code on the same task queue cannot fail a workflow task with a malformed answer.
 */
import { FAILURE, type FailureType } from '../../contract/failures.js';
import { ApplicationFailure, proxyActivities, proxyLocalActivities, type ActivityOptions } from '@temporalio/workflow';
import type { z } from 'zod';
import {
  AgentStepResult,
  AgentTurnResult,
  Candidates,
  CapabilitySearchResult,
  RunToolResult,
  CompactionOutput,
  CreateSubResult,
  HandOverResult,
  AnswerParentResult,
  ExtractionOutput,
  OrchestrationOutput,
  type AgentActivities,
  type AgentStepRequest,
  type AgentTurnRequest,
  type CallRemoteAgentRequest,
  type CapabilitySearchRequest,
  type PolicyActivities,
  type RunToolRequest,
  type CompactRequest,
  type CreateSubRequest,
  type HandOverRequest,
  type AnswerParentRequest,
  type ExtractRequest,
  type OrchestrateRequest,
  type RecallRequest,
  type RetiredActivities,
  type SessionActivities,
} from '../../contract/activity-contract.js';
import { RelevanceResult, RelevanceScores, type RelevanceRequest } from '../../contract/relevance.js';
import type { Settings } from '../../contract/messages.js';
import { STAGE } from '../../contract/state.js';
import { WorkerPolicy } from '../../contract/worker-policy.js';
import { describeIssues } from '../../contract/text.js';
import { ModelUsage } from '../../contract/usage.js';
import type { UsageMeter } from '../ledger/accounting.js';

/** Model failures that no retry can fix: the input degrades at once. */
const NON_RETRYABLE = [
  FAILURE.ModelInvalidOutput,
  FAILURE.ModelRequestRejected,
  FAILURE.ModelNotConfigured,
  FAILURE.InvalidRequest,
  FAILURE.HandOverRefused,
];

/**
 * Parses an activity result; a mismatch is a non-retryable failure of type `type`, which the stage
 * runner records as a fallback.
 */
export function checked<S extends z.ZodType>(
  schema: S,
  value: unknown,
  type: FailureType = FAILURE.InvalidActivityResult,
): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw ApplicationFailure.nonRetryable(`unexpected activity result: ${describeIssues(parsed.error)}`, type);
  }
  return parsed.data;
}

export type SessionActivityProxies = ReturnType<typeof makeActivities>;

// The worker answers from its configuration in memory; a few short attempts cover a busy worker.
const policy = proxyLocalActivities<PolicyActivities>({
  startToCloseTimeout: '5s',
  retry: { maximumAttempts: 3, initialInterval: '200ms' },
  summary: 'Reading the worker policy',
});

/**
 * The policy of the worker running this run (a local activity: a marker in history, never asked
 * again on replay). A worker that cannot answer fails the workflow task, which Temporal retries:
 * running without the worker's caps would let the start's settings win.
 */
export async function askWorkerPolicy(): Promise<WorkerPolicy> {
  let answer: unknown;
  try {
    answer = await policy.workerPolicy();
  } catch (err) {
    throw new Error(`the worker policy could not be read: ${err instanceof Error ? err.message : String(err)}`);
  }
  const parsed = WorkerPolicy.safeParse(answer);
  if (!parsed.success) throw new Error(`the worker policy is invalid: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

/** What a model call's usage is given to, and where its budget comes from (workflows/ledger/accounting.ts). */
export type ActivityMeter = Pick<UsageMeter, 'charge' | 'check'>;

/** The usage an activity result reports, if it is well formed; a malformed one is not counted. */
function usageOf(result: unknown): ModelUsage | undefined {
  if (!result || typeof result !== 'object' || !('usage' in result)) return undefined;
  const parsed = ModelUsage.safeParse(result.usage);
  return parsed.success ? parsed.data : undefined;
}

/** Builds the proxies for one Session from its settings; `meter` counts usage and budgets model calls. */
export function makeActivities(settings: Settings, meter?: ActivityMeter) {
  // Each model call carries the budget as it stands when the call is made, and its usage is counted
  // before its answer is checked: a call that answered spent its tokens either way.
  const budgeted = <R extends object>(request: R): R => {
    const budget = meter?.check();
    return budget ? { ...request, budget } : request;
  };
  const metered = <T>(role: string, result: T): T => {
    meter?.charge(role, usageOf(result));
    return result;
  };
  const retry: ActivityOptions['retry'] = {
    maximumAttempts: settings.modelAttempts,
    initialInterval: '250ms',
    backoffCoefficient: 2,
    maximumInterval: '2s',
    nonRetryableErrorTypes: NON_RETRYABLE,
  };
  // scheduleToClose bounds the whole call, retries and server-requested delays (retry-after) included,
  // so a rate-limited or dead model degrades an input instead of stalling the Session.
  const helper = <A extends object = SessionActivities>(summary: string, timeoutMs = settings.modelTimeoutMs) =>
    proxyActivities<A>({
      startToCloseTimeout: timeoutMs,
      scheduleToCloseTimeout: timeoutMs * settings.modelAttempts + 15_000,
      retry,
      summary,
    });
  // Recall is an in-process index look-up plus one memory query (`npx tsx bench/recall.ts`: p99
  // under 10 ms for skills/toolsets and about 30 ms for memories at 10,000 entries, on a loaded
  // 2-core machine). A local activity skips a server round trip and three history events; bounded
  // at 1 s per attempt and 2.5 s in all, it can never hold a workflow task near its 10 s timeout.
  // A slower recall degrades the input (capabilities kept) instead of stalling the Session.
  const recall = proxyLocalActivities<SessionActivities>({
    startToCloseTimeout: '1s',
    scheduleToCloseTimeout: '2500ms',
    retry: { maximumAttempts: 2, initialInterval: '100ms' },
    summary: STAGE.discover,
  });
  // Starting a Session is a short server call; its id is deterministic, so retries are safe.
  const directory = proxyActivities<SessionActivities>({
    startToCloseTimeout: '10s',
    retry: {
      maximumAttempts: 5,
      initialInterval: '500ms',
      maximumInterval: '5s',
      nonRetryableErrorTypes: [FAILURE.HandOverRefused, FAILURE.NotConfigured],
    },
    summary: 'Creating a sub-session',
  });
  // A sub-session's reply to its parent: the same short server call, shown as what it is.
  const answering = proxyActivities<SessionActivities>({
    startToCloseTimeout: '10s',
    retry: {
      maximumAttempts: 5,
      initialInterval: '500ms',
      maximumInterval: '5s',
      nonRetryableErrorTypes: [FAILURE.HandOverRefused, FAILURE.NotConfigured],
    },
    summary: 'Answering the parent Session',
  });
  // The inner loop: model steps and tool calls heartbeat, so a crashed worker is noticed in seconds,
  // not after the whole start-to-close budget; an interrupt's cancellation reaches them the same way.
  const agentQueue = settings.agentTaskQueue ? { taskQueue: settings.agentTaskQueue } : {};
  const agent = proxyActivities<AgentActivities>({
    ...agentQueue,
    startToCloseTimeout: settings.agentTimeoutMs,
    scheduleToCloseTimeout: settings.agentTimeoutMs * settings.modelAttempts + 15_000,
    heartbeatTimeout: '30s',
    retry,
    summary: STAGE.agent,
  });
  const tools = proxyActivities<AgentActivities>({
    ...agentQueue,
    startToCloseTimeout: settings.toolTimeoutMs,
    heartbeatTimeout: '30s',
    // A tool call has side effects: one retry after a lost worker, none after the tool itself failed.
    retry: { maximumAttempts: 2, initialInterval: '1s', nonRetryableErrorTypes: [FAILURE.InvalidRequest] },
    summary: 'Running a tool',
  });
  // A remote A2A agent: sent once (a retry follows the task its first attempt heartbeated), so the
  // same one retry after a lost worker as a tool call.
  const remote = proxyActivities<AgentActivities>({
    ...agentQueue,
    startToCloseTimeout: settings.toolTimeoutMs,
    heartbeatTimeout: '30s',
    retry: { maximumAttempts: 2, initialInterval: '1s', nonRetryableErrorTypes: [FAILURE.InvalidRequest] },
    summary: 'Calling a remote agent',
  });
  const relevance = helper(STAGE.understand).relevance;
  const extractTerms = helper(STAGE.extract).extractTerms;
  const orchestrate = helper(STAGE.orchestrate).orchestrate;
  const compact = helper(STAGE.compact).compact;
  const agentTurn = helper<RetiredActivities>(STAGE.agent, settings.agentTimeoutMs).agentTurn;
  const routeRelevance = helper(STAGE.route).relevance;
  return {
    // Terms come back from a worker that judges relevance and extracts them in one call.
    relevance: async (request: RelevanceRequest) =>
      checked(RelevanceResult, metered('relevance', await relevance(budgeted(request)))),
    extractTerms: async (request: ExtractRequest) =>
      checked(ExtractionOutput, metered('extraction', await extractTerms(budgeted(request)))),
    recall: async (request: RecallRequest) =>
      checked(Candidates, await recall.recall(request), FAILURE.InvalidRecallResult),
    // The agent's search is the same look-up: the same local activity bounds.
    searchCapabilities: async (request: CapabilitySearchRequest) =>
      checked(CapabilitySearchResult, await recall.searchCapabilities(request), FAILURE.InvalidRecallResult),
    orchestrate: async (request: OrchestrateRequest) =>
      checked(
        OrchestrationOutput,
        metered('orchestration', await orchestrate(budgeted(request))),
        FAILURE.ModelInvalidOutput,
      ),
    compact: async (request: CompactRequest) =>
      checked(CompactionOutput, metered('compaction', await compact(budgeted(request)))),
    agentTurn: async (request: AgentTurnRequest) => checked(AgentTurnResult, await agentTurn(request)),
    routeRelevance: async (request: RelevanceRequest) =>
      checked(RelevanceScores, metered('relevance', await routeRelevance(budgeted(request)))),
    createSubSession: async (request: CreateSubRequest) =>
      checked(CreateSubResult, await directory.createSubSession(request)),
    handOver: async (request: HandOverRequest) => checked(HandOverResult, await directory.handOver(request)),
    answerParent: async (request: AnswerParentRequest) =>
      checked(AnswerParentResult, await answering.answerParent(request)),
    agentStep: async (request: AgentStepRequest) =>
      checked(AgentStepResult, metered('agent', await agent.agentStep(budgeted(request)))),
    /**
     * The agent step sent ahead of the decision (speculation.ts): its answer unchecked and its usage
     * uncounted, because only the decision says whether it is the turn's step or a discarded one.
     */
    agentStepAhead: async (request: AgentStepRequest) => {
      const answer: unknown = await agent.agentStep(budgeted(request));
      return { answer, usage: usageOf(answer) };
    },
    runTool: async (request: RunToolRequest) => checked(RunToolResult, await tools.runTool(request)),
    callRemoteAgent: async (request: CallRemoteAgentRequest) =>
      checked(RunToolResult, await remote.callRemoteAgent(request)),
  };
}
