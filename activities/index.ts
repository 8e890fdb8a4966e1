/**
 * The Session's activities, built by a factory over their dependencies so tests pass real objects
 * (a model client pointed at a local server, a real catalog) instead of module mocks.
 */
import { createHash } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { ResourceRef, describeIssues, type MessageInput, type SessionStart } from '../workflows/schemas.js';
import { DEFAULT_RECALL, type CapabilityCatalog, type RecallOptions } from '../capabilities/catalog.js';
import type { MemoryRecall } from '../capabilities/memory-store.js';
import { toModelFailure } from '../models/model-errors.js';
import { recordModelCall } from './metrics.js';
import type { CallOptions, Role, RoleModels } from '../models/roles.js';
import type { SessionActivities } from '../workflows/activity-contract.js';

/** Starts Session workflows for `session_create_sub`; the worker implements it with a Temporal client. */
export interface SessionDirectory {
  /** Signal-with-start: creates the Session if it does not run yet, and delivers the message either way. */
  startWithMessage(args: { start: SessionStart; taskQueue: string; message: MessageInput }): Promise<void>;
}

export interface ActivityDeps {
  models: RoleModels;
  catalog: CapabilityCatalog;
  memories?: MemoryRecall;
  recall?: Partial<RecallOptions>;
  sessions?: SessionDirectory;
}

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
  })
  .strict();

/** Time left for one model call inside this activity attempt, and its cancellation signal. */
function callOptions(): CallOptions {
  const ctx = Context.current();
  const budget = ctx.info.startToCloseTimeoutMs;
  // Leave a little of the attempt's budget so the model client's own timeout fires first and the
  // failure is classified as a model timeout rather than a bare activity timeout.
  const timeoutMs = Math.max(100, budget > 1_000 ? budget - 250 : Math.floor(budget * 0.8));
  return { timeoutMs, signal: ctx.cancellationSignal };
}

async function asModelCall<T>(role: Role, fn: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    const result = await fn();
    recordModelCall(role, 'ok', performance.now() - started);
    return result;
  } catch (err) {
    // A cancelled attempt (worker shutdown, workflow cancelled) is not a model failure.
    if (Context.current().cancellationSignal.aborted) {
      recordModelCall(role, 'cancelled', performance.now() - started);
      throw err;
    }
    const failure = toModelFailure(err, role);
    recordModelCall(role, failure.type ?? 'error', performance.now() - started);
    throw failure;
  }
}

export function createActivities(deps: ActivityDeps): SessionActivities {
  const { models, catalog, memories } = deps;
  return {
    async relevance(request) {
      const parsed = RelevanceRequestSchema.safeParse(request);
      if (!parsed.success) {
        throw ApplicationFailure.nonRetryable(
          `relevance request refused: ${describeIssues(parsed.error)}`,
          'InvalidRequest',
        );
      }
      return asModelCall('relevance', () => models.relevance(parsed.data, callOptions()));
    },

    async extractTerms(request) {
      return asModelCall('extraction', () => models.extract(request, callOptions()));
    },

    recall(request) {
      const query = request.terms.length > 0 ? request.terms.join(' ') : request.text;
      const options = { ...DEFAULT_RECALL, ...deps.recall };
      const found = catalog.recall(query, options);
      const scope = { sessionId: request.sessionId, ...(request.userId ? { userId: request.userId } : {}) };
      return Promise.resolve({ ...found, memories: memories ? memories.recall(query, scope, options) : [] });
    },

    async orchestrate(request) {
      return asModelCall('orchestration', () => models.orchestrate(request, callOptions()));
    },

    async compact(request) {
      return asModelCall('compaction', () => models.compact(request, callOptions()));
    },

    async agentTurn(request) {
      const skills = request.skills.flatMap((id) => {
        const skill = catalog.skill(id);
        return skill ? [{ id, name: skill.name, instructions: skill.instructions() }] : [];
      });
      const tools = request.toolsets.flatMap((id) => {
        const toolset = catalog.toolset(id);
        return (toolset?.tools ?? []).map((t) => ({
          toolset: id,
          name: t.name,
          description: t.description,
          requiresApproval: t.requiresApproval,
        }));
      });
      const recalled = request.memories.flatMap((id) => {
        const text = memories?.text(id);
        return text === undefined ? [] : [{ id, text }];
      });
      return asModelCall('agent', () =>
        models.agent(
          {
            sessionId: request.sessionId,
            goals: request.goals,
            decision: request.decision,
            message: request.message,
            skills,
            tools,
            memories: recalled,
          },
          callOptions(),
        ),
      );
    },

    async createSubSession(request) {
      if (!deps.sessions) {
        throw ApplicationFailure.nonRetryable(
          'this worker cannot start sessions (no session directory)',
          'NotConfigured',
        );
      }
      const sessionId = subSessionId(request.parentSessionId, request.requestKey ?? request.message.messageId);
      // Deterministic defaults: the parent's settings and a named profile; no goals, so the new
      // Session initializes its own goals and environment from the handed-over message.
      await deps.sessions.startWithMessage({
        start: {
          sessionId,
          parentSessionId: request.parentSessionId,
          profile: request.profile,
          settings: request.settings,
        },
        taskQueue: request.taskQueue,
        message: {
          messageId: request.message.messageId,
          text: request.message.text,
          resources: request.message.resources,
          from: { kind: 'session', id: request.parentSessionId },
          routed: { fromSessionId: request.parentSessionId, reason: 'out-of-scope' },
        },
      });
      return { sessionId };
    },
  };
}
