/**
 * The agent step activity: resolves the facts the workflow passed (skill, toolset and memory ids) to
 * their content, asks the agent model for one step, and resolves each tool call it made: which
 * toolset declared it, how it runs, whether it waits for approval, and whether its arguments fit.
 */
import { FAILURE } from '../contract/failures.js';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { BUILTIN_DECLARATIONS, createSubDeclaration, MemorySaveArgs } from '../capabilities/builtin-tools.js';
import type { RemoteAgents } from './remote-agent.js';
import type { CapabilityCatalog } from '../capabilities/catalog.js';
import { parseToolArguments, ToolArgumentValidator } from '../capabilities/tool-arguments.js';
import type { ToolPolicy } from '../capabilities/tool-policy.js';
import { nameTools, type ToolOffer } from '../models/agent-request.js';
import type { AgentModelStep, AgentToolSpec } from '../models/roles.js';
import { AgentStepResult, type AgentStepRequest, type SessionKind } from '../contract/activity-contract.js';
import { type PolicyDecision, type ResolvedToolCall } from '../contract/transcript.js';
import { BUILTIN_TOOLS, GOAL_TOOL } from '../contract/builtin-tools.js';
import { describeIssues } from '../contract/text.js';
import type { ActivityDeps } from './deps.js';
import { budgetExhausted, meteredCall } from './model-call.js';
import { heartbeatWhileRunning } from './run-tool.js';
import { DeltaStream } from './agent-deltas.js';

/**
 * The tools offered for one step: the built-ins first (so they keep their names), then each loaded
 * toolset's tools in load order. A toolset that nobody runs (a file marked `"external": false`) is
 * not offered: the model would only collect error results from it.
 */
export function toolOffers(
  toolsets: string[],
  catalog: Pick<CapabilityCatalog, 'toolset'>,
  /** Whether `propose_goal_change` is offered (the request's `offerGoalChange`). */
  goalChange = false,
  /** The worker's remote A2A agents, which `session_create_sub` may name (`agent`). */
  remoteAgents: RemoteAgents['agents'] = {},
): AgentToolSpec[] {
  const declared = (name: (typeof BUILTIN_TOOLS)[number]) =>
    name === 'session_create_sub' ? createSubDeclaration(Object.values(remoteAgents)) : BUILTIN_DECLARATIONS[name];
  const offers: ToolOffer[] = BUILTIN_TOOLS.filter((name) => goalChange || name !== GOAL_TOOL).map((name) => ({
    tool: name,
    toolset: null,
    description: declared(name).description,
    inputSchema: declared(name).inputSchema,
    execution: 'builtin',
    requiresApproval: declared(name).requiresApproval,
  }));
  for (const id of toolsets) {
    const entry = catalog.toolset(id);
    if (!entry?.execution) continue;
    for (const tool of entry.tools) {
      offers.push({
        tool: tool.name,
        toolset: id,
        description: tool.description,
        inputSchema: tool.inputSchema,
        execution: entry.execution,
        requiresApproval: tool.requiresApproval,
      });
    }
  }
  return nameTools(offers);
}

/** What the approval policy needs besides the call: the rules, the Session kind and the tools' risk tags. */
export interface PolicyContext {
  policy: ToolPolicy;
  sessionKind: SessionKind | null;
  riskTags: (toolset: string | null, tool: string) => readonly string[];
}

/**
 * Each call the model made, resolved against the offered tools. A call naming no offered function is
 * `unknown`; a model that used a tool's own name instead of its function name still finds the tool
 * when exactly one offered tool has that name. With a policy, a matching rule decides whether the
 * call runs, waits for approval or is denied; without one (or when no rule matches) the toolset's
 * `requiresApproval` and the built-in defaults do.
 */
export function resolveCalls(
  calls: Extract<AgentModelStep, { kind: 'calls' }>['calls'],
  specs: AgentToolSpec[],
  validator: ToolArgumentValidator,
  policy?: PolicyContext,
  /** The tools' risk tags, recorded on each call for the people who approve it. */
  riskTags?: PolicyContext['riskTags'],
): ResolvedToolCall[] {
  const byFunction = new Map(specs.map((s) => [s.functionName, s]));
  return calls.map((call) => {
    const sameName = specs.filter((s) => s.tool === call.name);
    const spec = byFunction.get(call.name) ?? (sameName.length === 1 ? sameName[0] : undefined);
    if (!spec) {
      const parsed = parseToolArguments(call.arguments);
      return {
        callId: call.callId,
        tool: call.name,
        arguments: call.arguments,
        toolset: null,
        execution: 'unknown',
        requiresApproval: false,
        argumentError: 'error' in parsed ? parsed.error : null,
        policy: null,
      };
    }
    const decision = policyDecision(spec, call.arguments, policy);
    const required = spec.requiresApproval || savesUserMemory(spec, call.arguments);
    return {
      callId: call.callId,
      tool: spec.tool,
      arguments: call.arguments,
      toolset: spec.toolset,
      execution: spec.execution,
      // A denied call says it needs approval too: a workflow that predates policies then waits instead of running it.
      // An allow lifts the toolset's own approval only when its rule names that toolset outright.
      requiresApproval: decision
        ? decision.effect !== 'allow' || (required && !policy?.policy.liftsApproval(decision, spec.toolset))
        : required,
      argumentError: validator.check(spec.inputSchema, call.arguments),
      policy: decision,
      ...(riskTags ? { riskTags: [...riskTags(spec.toolset, spec.tool)] } : {}),
    };
  });
}

function policyDecision(spec: AgentToolSpec, args: string, context: PolicyContext | undefined): PolicyDecision | null {
  if (!context) return null;
  return context.policy.decide({
    tool: spec.tool,
    toolset: spec.toolset,
    arguments: args,
    riskTags: context.riskTags(spec.toolset, spec.tool),
    sessionKind: context.sessionKind,
  });
}

/**
 * A `memory_save` in the user's scope reaches every later Session of that user, so a person
 * approves it first; a Session-scoped save stays in this Session and runs at once.
 */
function savesUserMemory(spec: AgentToolSpec, args: string): boolean {
  if (spec.execution !== 'builtin' || spec.tool !== 'memory_save') return false;
  const parsed = parseToolArguments(args);
  return 'value' in parsed && MemorySaveArgs.safeParse(parsed.value).data?.scope === 'user';
}

export function createAgentStep(deps: ActivityDeps): (request: AgentStepRequest) => Promise<AgentStepResult> {
  const { models, catalog, memories, toolPolicy } = deps;
  const validator = new ToolArgumentValidator();
  const riskTags = (toolset: string | null, tool: string) =>
    (toolset === null ? undefined : catalog.toolset(toolset)?.tools.find((t) => t.name === tool)?.riskTags) ?? [];
  return async (request) => {
    const overBudget = budgetExhausted(deps, request.budget);
    if (overBudget !== null) return { kind: 'budget-exceeded', reason: overBudget };
    const skills = request.skills.flatMap((id) => {
      const skill = catalog.skill(id);
      return skill ? [{ id, name: skill.name, instructions: skill.instructions() }] : [];
    });
    // The ids come from workflow state; a memory of another Session or user is refused, not read.
    const reader = { sessionId: request.sessionId, userId: request.userId };
    const texts = await Promise.all(
      request.memories.map(async (id) => ({ id, text: await memories?.text(id, reader) })),
    );
    const recalled = texts.flatMap(({ id, text }) => (text === undefined ? [] : [{ id, text }]));
    const tools = toolOffers(request.toolsets, catalog, request.offerGoalChange === true, deps.remoteAgents?.agents);
    const stopHeartbeats = heartbeatWhileRunning(deps);
    // No outlet, no deltas: nothing is streamed to nobody, and the Session is not asked for its last id.
    const ctx = Context.current();
    const deltas = deps.deltas
      ? new DeltaStream(deps.deltas, request.sessionId, {
          step: request.step,
          attempt: ctx.info.attempt,
          speculative: request.speculative === true,
          ...(request.afterEvent !== undefined ? { afterEvent: request.afterEvent } : {}),
          log: (line: string) => {
            ctx.log.warn(line);
          },
        })
      : undefined;
    const streamed = meteredCall(
      'agent',
      deps,
      models,
      (m, call) =>
        m.agentStep(
          {
            sessionId: request.sessionId,
            goals: request.goals,
            decision: request.decision,
            summaries: request.summaries,
            artifacts: request.artifacts ?? [],
            transcript: request.transcript,
            skills,
            memories: recalled,
            tools,
            step: request.step,
          },
          deltas ? { ...call, onText: (piece) => deltas.push(piece) } : call,
        ),
      request.speculative === true,
    ).finally(stopHeartbeats);
    const { value: answer, usage } = await streamed.then(
      async (done) => {
        await deltas?.end();
        return done;
      },
      (err: unknown) => {
        deltas?.stop();
        throw err;
      },
    );
    const step: AgentStepResult =
      answer.kind === 'calls'
        ? {
            kind: 'calls',
            text: answer.text,
            ...(answer.reasoning !== undefined ? { reasoning: answer.reasoning } : {}),
            calls: resolveCalls(
              answer.calls,
              tools,
              validator,
              toolPolicy ? { policy: toolPolicy, sessionKind: request.sessionKind ?? null, riskTags } : undefined,
              riskTags,
            ),
          }
        : answer;
    const result = usage ? { ...step, usage } : step;
    // The workflow trusts this shape; a provider that breaks it is a bug, not something to retry.
    const checked = AgentStepResult.safeParse(result);
    if (!checked.success) {
      throw ApplicationFailure.nonRetryable(
        `agent step result is malformed: ${describeIssues(checked.error)}`,
        FAILURE.ModelInvalidOutput,
      );
    }
    return checked.data;
  };
}
