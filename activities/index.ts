/**
 * The Session's activities, built by a factory over their dependencies so tests pass real objects
 * (a model client pointed at a local server, a real catalog) instead of module mocks.
 */
import { FAILURE } from '../contract/failures.js';
import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { ResourceRef, type MessageInput, type SubSessionReply } from '../contract/messages.js';
import {
  DEFAULT_SIGNATURE_TTL_MS,
  messageSigningPayload,
  signControl,
  unsigned,
} from '../contract/control-signature.js';
import { clip, describeIssues } from '../contract/text.js';
import { DEFAULT_RECALL } from '../capabilities/catalog.js';
import type {
  Candidate,
  FoundCapability,
  AgentActivities,
  ApprovalEditActivities,
  PolicyActivities,
  SessionActivities,
} from '../contract/activity-contract.js';
import { createApprovalEditActivities } from './approval-edits.js';
import { createAgentStep } from './agent-step.js';
import type { ActivityDeps, SessionDirectory } from './deps.js';
import { helperCall } from './model-call.js';
import { BudgetCheck } from '../contract/usage.js';
import { createRunTool } from './run-tool.js';
import { callRemoteAgent } from './remote-agent.js';
import { DEFAULT_MAX_SIGNATURE_LIFETIME_MS, createPolicyActivities } from './worker-policy.js';

export type { ActivityDeps, SessionDirectory } from './deps.js';

/** How much of a found capability's description the agent reads in a search result. */
const FOUND_DESCRIPTION_CHARS = 300;

/**
 * The id of the sub-session created for one request: derived from the parent and the request's
 * messageId, so a retried activity (or a worker killed mid-call) can never create a second one.
 */
export function subSessionId(parentSessionId: string, messageId: string): string {
  const digest = createHash('sha256').update(`${parentSessionId}\n${messageId}`).digest('hex').slice(0, 12);
  return `${parentSessionId.slice(0, 100)}.sub-${digest}`;
}

/** The relevance role's input, strictly: a request carrying anything else is refused. */
const RelevanceRequestSchema = z
  .object({
    message: z.object({ text: z.string(), resources: z.array(ResourceRef) }).strict(),
    phaseGoal: z.string(),
    sessionGoal: z.string(),
    budget: BudgetCheck.optional(),
  })
  .strict();

/** Every activity the Session workflow schedules, the inner loop's included; the worker registers them all. */
export function createActivities(
  deps: ActivityDeps,
): SessionActivities & AgentActivities & PolicyActivities & ApprovalEditActivities {
  const { catalog, memories } = deps;
  const directory = (): SessionDirectory => {
    if (!deps.sessions) {
      throw ApplicationFailure.nonRetryable(
        'this worker cannot reach sessions (no session directory)',
        FAILURE.NotConfigured,
      );
    }
    return deps.sessions;
  };
  // Hand-overs and replies are signed by the worker that sends them, with its first control key, so
  // the receiving Session (under signed control) trusts their session identity, route, note and reply.
  const signingKey = deps.policy?.controlKeys?.[0];
  // Never longer than the receiving workers accept (HARNESS_MAX_SIGNATURE_LIFETIME_MS, the same on every
  // worker of the namespace): a 15-minute signature under a shorter maximum would be refused on arrival.
  const lifetimeMs = Math.min(
    DEFAULT_SIGNATURE_TTL_MS,
    deps.policy?.maxSignatureLifetimeMs ?? DEFAULT_MAX_SIGNATURE_LIFETIME_MS,
  );
  const expiry = () => Date.now() + lifetimeMs;
  const signedHandOver = (sessionId: string, message: MessageInput): MessageInput => {
    if (!signingKey) return message;
    const body = unsigned(message) as MessageInput;
    return {
      ...body,
      signature: signControl(signingKey, 'message', sessionId, messageSigningPayload(body), expiry()),
    };
  };
  const signedReply = (parentSessionId: string, reply: SubSessionReply): SubSessionReply => {
    if (!signingKey) return reply;
    const body = unsigned(reply);
    return {
      ...(body as SubSessionReply),
      signature: signControl(signingKey, 'subSessionReply', parentSessionId, body, expiry()),
    };
  };
  // The same recall for a phase's preparation and the agent's search: one index, one set of bounds.
  const recallFor = async (query: string, who: { sessionId: string; userId?: string | undefined }) => {
    const options = { ...DEFAULT_RECALL, ...deps.recall };
    const found = catalog.recall(query, options);
    const scope = { sessionId: who.sessionId, ...(who.userId ? { userId: who.userId } : {}) };
    // Memory candidates carry their text (shown in the activity result in the Web UI).
    return { ...found, memories: memories ? await memories.recall(query, scope, options) : [] };
  };
  return {
    agentStep: createAgentStep(deps),
    runTool: createRunTool(deps),
    callRemoteAgent: (request) => callRemoteAgent(deps, request),
    // The budget maximum the agent step enforces is the one the workflow is told about.
    ...createPolicyActivities({ ...deps.policy, ...(deps.budgetMax ? { budgetMax: deps.budgetMax } : {}) }),
    ...createApprovalEditActivities(deps),

    async relevance(request) {
      const parsed = RelevanceRequestSchema.safeParse(request);
      if (!parsed.success) {
        throw ApplicationFailure.nonRetryable(
          `relevance request refused: ${describeIssues(parsed.error)}`,
          FAILURE.InvalidRequest,
        );
      }
      const { budget, ...scored } = parsed.data;
      // One call for the scores and the task terms when the provider offers it (counted as relevance);
      // a budget fallback to the local provider, which does not, judges relevance alone.
      const combined = (deps.understanding ?? 'combined') === 'combined';
      return helperCall('relevance', deps, budget, (m, call) =>
        combined && m.understand ? m.understand(scored, call) : m.relevance(scored, call),
      );
    },

    async extractTerms(request) {
      const { budget, ...rest } = request;
      return helperCall('extraction', deps, budget, (m, call) => m.extract(rest, call));
    },

    async recall(request) {
      return recallFor(request.terms.length > 0 ? request.terms.join(' ') : request.text, request);
    },

    async searchCapabilities(request) {
      const found = await recallFor(request.query, request);
      const described = (description: string, tools?: string[]): Omit<FoundCapability, keyof Candidate> => ({
        description: clip(description, FOUND_DESCRIPTION_CHARS),
        ...(tools ? { tools } : {}),
      });
      return {
        skills: found.skills.map((c) => ({ ...c, ...described(catalog.skill(c.id)?.description ?? '') })),
        toolsets: found.toolsets.map((c) => {
          const entry = catalog.toolset(c.id);
          return { ...c, ...described(entry?.description ?? '', entry?.tools.map((t) => t.name) ?? []) };
        }),
        memories: found.memories.map(({ id, name, source, score }) => ({
          id,
          name,
          source,
          score,
          ...described(name),
        })),
      };
    },

    async orchestrate(request) {
      const { budget, ...rest } = request;
      return helperCall('orchestration', deps, budget, (m, call) => m.orchestrate(rest, call));
    },

    async compact(request) {
      const { budget, ...rest } = request;
      return helperCall('compaction', deps, budget, (m, call) => m.compact(rest, call));
    },

    async createSubSession(request) {
      const sessions = directory();
      const sessionId = subSessionId(request.parentSessionId, request.requestKey ?? request.message.messageId);
      // Deterministic defaults: the parent's settings and a named profile; no goals, so the new
      // Session initializes its own goals and environment from the handed-over message.
      const answer = await sessions.submitWithStart({
        start: {
          sessionId,
          parentSessionId: request.parentSessionId,
          profile: request.profile,
          settings: request.settings,
          ...(request.depth === undefined ? {} : { depth: request.depth }),
        },
        taskQueue: request.taskQueue,
        message: signedHandOver(sessionId, {
          messageId: request.message.messageId,
          text: request.message.text,
          resources: request.message.resources,
          from: { kind: 'session', id: request.parentSessionId },
          routed: {
            fromSessionId: request.parentSessionId,
            reason: request.reason ?? 'out-of-scope',
            ...(request.parentSeq === undefined ? {} : { seq: request.parentSeq }),
          },
          ...(request.message.note ? { note: request.message.note } : {}),
        }),
      });
      return { sessionId, seq: answer.seq, duplicate: answer.duplicate };
    },

    async handOver(request) {
      const message = signedHandOver(request.sessionId, request.message);
      const answer = await directory().submit({ sessionId: request.sessionId, message });
      return { seq: answer.seq, duplicate: answer.duplicate };
    },

    async answerParent(request) {
      return directory().reply({ sessionId: request.sessionId, reply: signedReply(request.sessionId, request.reply) });
    },
  };
}
