/**
 * The agent's own capability tools, run by the Session. `capabilities_search` asks the same recall a
 * phase is prepared with (the searchCapabilities local activity), by the agent's query and with the
 * same bounds; what it found is kept on the turn. `capabilities_load` adds one capability the search
 * found in this turn, `capabilities_unload` removes one that is loaded: each is applied as a
 * capability diff on top of what the phase's orchestration loaded, recorded as a revision with
 * reason `agent`, and capped per turn. The next model step's request carries the change. The
 * approval policy has had its say before a call gets here, as for any tool.
 */
import {
  CapabilitiesSearchArgs,
  CapabilityChangeArgs,
  type CapabilityKind,
  type CapabilityTool,
} from '../../contract/builtin-tools.js';
import type { CapabilitySearchResult } from '../../contract/activity-contract.js';
import { finishCall } from '../../contract/pending-calls.js';
import { CAP_KINDS, keepLast, type ActiveTurn, type CapKind, type PendingCall } from '../../contract/state.js';
import { describeIssues, parseJson } from '../../contract/text.js';
import { clipToolOutput } from '../../contract/transcript.js';
import { applySelection, changeOne } from '../environment/capability-diff.js';
import { agentChangesIn, commitCapabilities } from '../environment/capability-revisions.js';
import type { SessionContext } from '../stages/session-context.js';

const KIND: Record<CapabilityKind, CapKind> = { skill: 'skills', toolset: 'toolsets', memory: 'memories' };
const KIND_NAME: Record<CapKind, CapabilityKind> = { skills: 'skill', toolsets: 'toolset', memories: 'memory' };

/** Found capabilities a turn keeps per kind for its loads, the newest searches' first to stay. */
const FOUND_PER_KIND = 24;

/** Runs one `capabilities_*` call and finishes it with the result the model sees. */
export async function runCapabilityTool(
  ctx: SessionContext,
  turn: ActiveTurn,
  call: PendingCall,
  tool: CapabilityTool,
): Promise<void> {
  const raw = parseJson(call.arguments);
  if (tool === 'capabilities_search') {
    const args = CapabilitiesSearchArgs.safeParse(raw);
    if (!args.success) return finishCall(call, 'error', `invalid arguments for ${tool}: ${describeIssues(args.error)}`);
    const { state } = ctx;
    const found = await ctx.cancellable('tool', () =>
      ctx.activities.searchCapabilities({
        sessionId: state.sessionId,
        ...(turn.from?.kind === 'user' && turn.from.id ? { userId: turn.from.id } : {}),
        query: args.data.query,
      }),
    );
    remember(turn, found);
    return finishCall(call, 'ok', clipToolOutput(JSON.stringify(searchOutput(ctx, args.data.query, found))));
  }
  const args = CapabilityChangeArgs.safeParse(raw);
  if (!args.success) return finishCall(call, 'error', `invalid arguments for ${tool}: ${describeIssues(args.error)}`);
  const outcome = change(ctx, turn, call.callId, tool === 'capabilities_load' ? 'load' : 'unload', args.data);
  finishCall(call, outcome.ok ? 'ok' : 'error', `${tool}: ${outcome.text}`);
}

/** What the model reads of a search: each capability with its kind, id, what it is, and whether it is loaded. */
function searchOutput(ctx: SessionContext, query: string, found: CapabilitySearchResult) {
  const loaded = ctx.state.capabilities;
  const list = CAP_KINDS.flatMap((kind) =>
    found[kind].map((c) => ({
      kind: KIND_NAME[kind],
      id: c.id,
      name: c.name,
      description: c.description,
      ...(c.tools ? { tools: c.tools } : {}),
      score: Math.round(c.score * 1000) / 1000,
      loaded: loaded[kind].some((l) => l.id === c.id),
    })),
  );
  const next =
    list.length === 0
      ? 'Nothing in the catalog fits this query; try other words, or tell the user what is missing.'
      : 'Load what the next step needs with capabilities_load {kind, id}; its tools or instructions are in your next step.';
  return { query, found: list, next };
}

/** Keeps what a search found on the turn (the newest first to stay), for the loads that follow it. */
function remember(turn: ActiveTurn, found: CapabilitySearchResult): void {
  const kept = turn.found ?? { skills: [], toolsets: [], memories: [] };
  for (const kind of CAP_KINDS) {
    const fresh = found[kind].map(({ id, name, source }) => ({ id, name, source }));
    const list = [...kept[kind].filter((c) => !fresh.some((f) => f.id === c.id)), ...fresh];
    keepLast(list, FOUND_PER_KIND);
    kept[kind] = list;
  }
  turn.found = kept;
}

/** Applies one load or unload as a capability diff, or says why not. */
function change(
  ctx: SessionContext,
  turn: ActiveTurn,
  callId: string,
  op: 'load' | 'unload',
  ref: CapabilityChangeArgs,
): { ok: boolean; text: string } {
  const { state } = ctx;
  const kind = KIND[ref.kind];
  const name = `${ref.kind} ${ref.id}`;
  const isLoaded = state.capabilities[kind].some((c) => c.id === ref.id);
  if (op === 'load' && isLoaded) return { ok: true, text: `${name} is already loaded; nothing changed` };
  if (op === 'unload' && !isLoaded) return { ok: false, text: `${name} is not loaded; nothing changed` };
  if (op === 'load' && !turn.found?.[kind].some((c) => c.id === ref.id)) {
    return {
      ok: false,
      text: `refused: ${name} was not found by capabilities_search in this turn; search for it first and load an id the search listed`,
    };
  }
  const cap = state.settings.maxCapabilityChangesPerTurn;
  const made = agentChangesIn(state, turn.seq);
  if (made >= cap) {
    return {
      ok: false,
      text: `refused: at most ${cap} capability loads and unloads per turn, and this turn made ${made}; go on with what is loaded or tell the user`,
    };
  }
  const applied = applySelection(
    state.capabilities,
    turn.found ?? { skills: [], toolsets: [], memories: [] },
    changeOne(state.capabilities, kind, ref.id, op),
  );
  commitCapabilities(state, applied, { reason: 'agent', seq: turn.seq, callId });
  const done = op === 'load' ? 'loaded; its tools or instructions are in your next step' : 'unloaded';
  return { ok: true, text: `${name} ${done} (capability revision ${applied.next.revision})` };
}
