/**
 * The transcript window a model step sees: the current phase's items (earlier phases are
 * represented by their hand-off summaries and the Session's artifacts). When the window is over the
 * per-model context budget, the oldest sealed items (from earlier turns) are compacted into one
 * summary item before the call, and if the current turn alone is still over it, its earlier tool
 * results are cut to stubs. Items are whole units, so a tool call is never separated from its result.
 */
import { isCancellation, patched } from '@temporalio/workflow';
import type { SessionContext } from '../stages/session-context.js';
import { describeFailure } from '../stages/stage-runner.js';
import type { ActiveTurn, SessionState } from '../../contract/state.js';
import { clip, clipBytes, jsonBytes } from '../../contract/text.js';
import { clipToolOutput, type TranscriptItem } from '../../contract/transcript.js';

/** One transcript item as plain text, for the compaction role. */
export function itemText(item: TranscriptItem): string {
  switch (item.kind) {
    case 'user':
      return `User (#${item.seq}): ${item.text}`;
    case 'reply':
      return `Assistant: ${item.text}`;
    case 'summary':
      return `Summary: ${item.text}`;
    case 'sub-reply':
      return `Sub-session ${item.sessionId} answered "${clip(item.request, 200)}" (${item.outcome}): ${item.text}`;
    case 'step':
      return [
        ...(item.text ? [`Assistant: ${item.text}`] : []),
        ...item.calls.map((c) => `Tool ${c.tool}(${clip(c.arguments, 300)}) -> ${c.status}: ${clip(c.output, 600)}`),
      ].join('\n');
  }
}

/**
 * Compaction brings a window over budget down to this share of it, so it runs once every so many
 * inputs instead of at every input once the window is full (which cost an extra model call and
 * history round trip per input).
 */
export const COMPACT_TO_SHARE = 0.5;

/**
 * Which of `items` to compact when they are over `budget`, so the rest fits `target` (≤ budget): the
 * oldest sealed ones (seq < `before`). Nothing when the items fit the budget.
 */
export function itemsToCompact(
  items: TranscriptItem[],
  before: number,
  budget: number,
  target: number = budget,
): TranscriptItem[] {
  let size = jsonBytes(items);
  if (size <= budget) return [];
  const chosen: TranscriptItem[] = [];
  for (const item of items) {
    if (size <= target || item.seq >= before) break;
    chosen.push(item);
    size -= jsonBytes(item) + 1;
  }
  return chosen;
}

/** What an earlier step of the current turn keeps of each call's arguments and output once the turn is over budget. */
export const TURN_STUB_BYTES = 512;

/**
 * A long tool loop inside one turn: when `items` are still over `budget`, the turn's earlier steps
 * (oldest first, never its newest) keep only a clipped, marked stub of each call's arguments and
 * output, until the items fit. The transcript itself keeps them whole: only the request is cut.
 */
export function stubTurnOutputs(items: TranscriptItem[], turnSeq: number, budget: number): TranscriptItem[] {
  let size = jsonBytes(items);
  if (size <= budget) return items;
  let newest = -1;
  items.forEach((item, i) => {
    if (item.kind === 'step' && item.seq === turnSeq) newest = i;
  });
  const out = [...items];
  for (let i = 0; i < newest && size > budget; i++) {
    const item = out[i];
    if (item?.kind !== 'step' || item.seq !== turnSeq) continue;
    const stub: TranscriptItem = {
      ...item,
      calls: item.calls.map((c) => ({
        ...c,
        arguments: clipToolOutput(c.arguments, TURN_STUB_BYTES),
        output: clipToolOutput(c.output, TURN_STUB_BYTES),
      })),
    };
    size -= jsonBytes(item) - jsonBytes(stub);
    out[i] = stub;
  }
  return out;
}

/**
 * The current phase's items, compacting older sealed items first when they exceed the budget, then
 * the current turn's earlier tool results (stubTurnOutputs) if one turn alone is still over it.
 */
export async function contextWindow(ctx: SessionContext, turn: ActiveTurn): Promise<TranscriptItem[]> {
  const items = await phaseWindow(ctx, turn);
  const budget = ctx.state.settings.agentContextBytes;
  // Histories recorded before turn compaction sent the turn whole (it changes only the activity input).
  if (jsonBytes(items) <= budget || !patched('compact-turn-outputs')) return items;
  return stubTurnOutputs(items, turn.seq, budget);
}

/** The current phase's items of `transcript` (the Session's own unless another is given). */
export function phaseItems(state: SessionState, transcript: TranscriptItem[] = state.transcript): TranscriptItem[] {
  const phaseStart = state.phases.at(-1)?.startedAtSeq ?? 0;
  return transcript.filter((item) => item.seq >= phaseStart);
}

async function phaseWindow(ctx: SessionContext, turn: ActiveTurn): Promise<TranscriptItem[]> {
  const { state } = ctx;
  const budget = state.settings.agentContextBytes;
  const inPhase = () => phaseItems(state);
  const window = inPhase();
  const fit = itemsToCompact(window, turn.seq, budget);
  if (fit.length < 2) return window;
  // Compacting only what is over budget compacted again at every later input (replay keeps that).
  const old = patched('compact-to-low-water')
    ? itemsToCompact(window, turn.seq, budget, Math.floor(budget * COMPACT_TO_SHARE))
    : fit;
  try {
    const result = await ctx.cancellable('model', () =>
      ctx.activities.compact({ phaseGoal: state.goals.phase?.text ?? '', inputs: old.map(itemText) }),
    );
    const last = old.at(-1);
    const first = state.transcript.indexOf(old[0] as TranscriptItem);
    if (first >= 0 && last) {
      const summary: TranscriptItem = { kind: 'summary', seq: last.seq, text: clipBytes(result.summary, 8 * 1024) };
      state.transcript.splice(first, old.length, summary);
    }
    return inPhase();
  } catch (err) {
    if (isCancellation(err) && !turn.interrupted) throw err;
    // Compaction failed: the step still runs, on the newest items that fit.
    turn.record.fallbacks.push(clipBytes(`context compaction: ${describeFailure(err)}; oldest items left out`, 500));
    return window.filter((item) => !fit.includes(item));
  }
}
