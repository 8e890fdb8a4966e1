/**
 * Sub-sessions that are remote A2A agents: a `session_create_sub` call naming `agent` (one of the
 * worker's `HARNESS_A2A_REMOTE_AGENTS`) runs the `callRemoteAgent` activity, which sends the request to that
 * agent and waits for its task to end (activities/remote-agent.ts). The answer is the call's result,
 * so the agent continues the same turn with it; the call is listed in the input's record (`remote`)
 * and counts against `maxSubSessionsPerTurn` like a local sub-session. An unknown name, a refused
 * host or a failed task is a tool error the model sees.
 */
import type { CreateSubArgs } from '../../contract/builtin-tools.js';
import { finishCall } from '../../contract/pending-calls.js';
import type { ActiveTurn, PendingCall } from '../../contract/state.js';
import type { SessionContext } from '../stages/session-context.js';

/** Sub-sessions this turn created or called remotely: what `maxSubSessionsPerTurn` bounds. */
export function subSessionsThisTurn(ctx: SessionContext, turn: ActiveTurn): number {
  const local = ctx.state.children.filter((c) => c.createdAtSeq === turn.seq).length;
  return local + (ctx.patches.remoteSubsessions ? (turn.record.remote?.length ?? 0) : 0);
}

/** Runs a `session_create_sub` call that names a remote agent; the caps were checked by the caller. */
export async function callRemoteSubSession(
  ctx: SessionContext,
  turn: ActiveTurn,
  call: PendingCall,
  args: CreateSubArgs & { agent: string },
): Promise<void> {
  const { state } = ctx;
  const resources = args.resources.map((r) => `[resource] ${r.title ? `${r.title} ` : ''}${r.uri}`);
  const at = Date.now();
  const result = await ctx.cancellable('tool', () =>
    ctx.activities.callRemoteAgent({
      sessionId: state.sessionId,
      seq: turn.seq,
      callId: call.callId,
      agent: args.agent,
      text: [args.text, ...resources].join('\n'),
    }),
  );
  (turn.record.remote ??= []).push({
    callId: call.callId,
    agent: args.agent,
    at,
    outcome: result.isError ? 'failed' : 'answered',
  });
  finishCall(call, result.isError ? 'error' : 'ok', result.output);
}
