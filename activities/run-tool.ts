/**
 * The runTool activity: one `mcp` call through the worker's live MCP connection, or the `memory_save`
 * built-in. What went wrong with the tool itself (it failed, timed out, is not configured) is a result
 * the model sees (`isError`), not an activity failure; only a server that could not be reached before
 * anything was sent fails the attempt, as retryable, since nothing ran yet.
 */
import { Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { isBuiltinTool, MemorySaveArgs } from '../capabilities/builtin-tools.js';
import { McpServerUnavailable, McpToolsetUnknown } from '../capabilities/mcp-catalog.js';
import { formatMemoryScope, type MemoryScope } from '../capabilities/memory-store.js';
import { parseToolArguments } from '../capabilities/tool-arguments.js';
import { toolResultResources, toolResultText } from '../capabilities/tool-output.js';
import { McpServerUnavailableFailure } from '../contract/failures.js';
import { clipToolOutput } from '../contract/transcript.js';
import type { RunToolRequest, RunToolResult } from '../contract/activity-contract.js';
import { describeIssues } from '../contract/text.js';
import type { ActivityDeps } from './deps.js';
import { recordToolCall } from './metrics.js';

/** Heartbeat period while a tool runs, unless the activity's heartbeat timeout asks for more often. */
export const TOOL_HEARTBEAT_MS = 3_000;

const failed = (output: string): RunToolResult => ({ output: clipToolOutput(output), isError: true });

async function saveMemory(deps: ActivityDeps, request: RunToolRequest): Promise<RunToolResult> {
  const add = deps.memories?.add?.bind(deps.memories);
  if (!add) return failed('memory_save: this worker has no memory store');
  const parsed = parseToolArguments(request.arguments);
  if ('error' in parsed) return failed(`memory_save: ${parsed.error}`);
  const args = MemorySaveArgs.safeParse(parsed.value);
  if (!args.success) return failed(`memory_save: ${describeIssues(args.error)}`);
  if (args.data.scope === 'user' && !request.userId) {
    return failed('memory_save: this input has no user id, so nothing was saved; use scope "session"');
  }
  const scope: MemoryScope =
    args.data.scope === 'user' && request.userId ? { userId: request.userId } : { sessionId: request.sessionId };
  const item = await add({ text: args.data.text, scope });
  return { output: `Saved memory ${item.id} (scope ${formatMemoryScope(scope)}).`, isError: false };
}

/**
 * Heartbeats every few seconds until stopped, so a dead worker is noticed while a tool or a model
 * step runs long, and a cancellation (the `interrupt` command) reaches the activity.
 */
export function heartbeatWhileRunning(deps: ActivityDeps): () => void {
  const ctx = Context.current();
  const timeout = ctx.info.heartbeatTimeoutMs;
  const every = Math.max(
    50,
    Math.min(deps.heartbeatEveryMs ?? TOOL_HEARTBEAT_MS, timeout ? Math.floor(timeout / 3) : Infinity),
  );
  const timer = setInterval(() => ctx.heartbeat(), every);
  return () => clearInterval(timer);
}

/** The remaining time of this attempt, less a margin so the tool's own timeout is what the model sees. */
function attemptBudgetMs(): number {
  const { startToCloseTimeoutMs } = Context.current().info;
  return Math.max(100, startToCloseTimeoutMs > 2_000 ? startToCloseTimeoutMs - 500 : startToCloseTimeoutMs * 0.8);
}

async function callMcp(deps: ActivityDeps, request: RunToolRequest, toolset: string): Promise<RunToolResult> {
  const entry = deps.catalog.toolset(toolset);
  if (entry?.execution === 'external') {
    return failed(`${request.tool}: toolset "${toolset}" is run by a backend service (toolResult), not by the worker`);
  }
  if (!deps.mcp) return failed(`${request.tool}: this worker has no MCP connections (set HARNESS_MCP_CONFIG)`);
  const parsed = parseToolArguments(request.arguments);
  if ('error' in parsed) return failed(`${request.tool}: ${parsed.error}`);
  const ctx = Context.current();
  const stopHeartbeats = heartbeatWhileRunning(deps);
  try {
    const result = await deps.mcp.callTool(toolset, request.tool, parsed.value, {
      signal: ctx.cancellationSignal,
      maxTimeoutMs: attemptBudgetMs(),
      onProgress: () => ctx.heartbeat(),
      callId: request.callId,
      ...(request.seq !== undefined ? { idempotencyKey: `${request.sessionId}:${request.seq}:${request.callId}` } : {}),
    });
    const resources = toolResultResources(result);
    return {
      output: clipToolOutput(toolResultText(result)),
      isError: result.isError === true,
      ...(resources.length > 0 ? { resources } : {}),
    };
  } catch (err) {
    if (ctx.cancellationSignal.aborted) {
      throw ctx.cancellationSignal.reason instanceof Error
        ? ctx.cancellationSignal.reason
        : new CancelledFailure('the tool call was cancelled');
    }
    if (err instanceof McpToolsetUnknown) return failed(`${request.tool}: ${err.message}`);
    if (err instanceof McpServerUnavailable) throw new McpServerUnavailableFailure(err.message).toApplicationFailure();
    if (err instanceof McpError && err.code === (ErrorCode.RequestTimeout as number)) {
      return failed(`${request.tool}: no answer in time (${err.message}); it may or may not have finished`);
    }
    if (err instanceof McpError) return failed(`${request.tool}: ${err.message}`);
    // The request went out and the connection broke: the tool may have run, so no retry here.
    const message = err instanceof Error ? err.message : String(err);
    return failed(`${request.tool}: the call failed (${message}); it may or may not have run`);
  } finally {
    stopHeartbeats();
  }
}

export function createRunTool(deps: ActivityDeps): (request: RunToolRequest) => Promise<RunToolResult> {
  const run = async (request: RunToolRequest): Promise<RunToolResult> => {
    if (request.toolset === null) {
      if (request.tool === 'memory_save') return saveMemory(deps, request);
      if (isBuiltinTool(request.tool)) return failed(`${request.tool} is run by the Session workflow, not by runTool`);
      return failed(`${request.tool}: no loaded toolset declares this tool`);
    }
    return callMcp(deps, request, request.toolset);
  };
  return async (request) => {
    try {
      const result = await run(request);
      recordToolCall(request.tool, result.isError ? 'error' : 'ok');
      return result;
    } catch (err) {
      recordToolCall(request.tool, Context.current().cancellationSignal.aborted ? 'interrupted' : 'error');
      throw err;
    }
  };
}
