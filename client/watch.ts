/**
 * `SessionClient.watch`: a Session's stage and decision changes as a stream of events, by polling
 * its snapshot query. Kept apart from the client class because it only reads through the client's
 * public queries.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { STAGE } from '../contract/state.js';
import type { DecisionRecord } from '../contract/state.js';
import type { SessionView } from '../contract/queries.js';
import type { WatchEvent, WatchOptions } from './types.js';

/** The reads `watch` polls; a structural type, so this module need not import the client class. */
export interface SessionReader {
  snapshot(sessionId: string): Promise<SessionView>;
  decisions(sessionId: string, options: { limit?: number }): Promise<DecisionRecord[]>;
  describe(sessionId: string): Promise<{ executionStatus: string }>;
}

/**
 * Stage and decision changes, by polling `snapshot`. Ends when the Session closes (or its workflow
 * ends otherwise) or the signal aborts. Decisions are yielded before the stage that follows them.
 */
export async function* watchSession(
  reader: SessionReader,
  sessionId: string,
  options: WatchOptions = {},
): AsyncGenerator<WatchEvent, void, undefined> {
  const interval = options.intervalMs ?? 250;
  let lastSeq = options.sinceSeq;
  let lastStage: string | undefined;
  let lastBound = -1;
  for (let polls = 1; !options.signal?.aborted; polls++) {
    const view = await reader.snapshot(sessionId);
    const newest = view.lastDecision?.seq ?? 0;
    lastSeq ??= newest;
    if (newest > lastSeq) {
      const after: number = lastSeq;
      const records =
        newest - after === 1 && view.lastDecision
          ? [view.lastDecision]
          : (await reader.decisions(sessionId, { limit: newest - after })).filter((r) => r.seq > after);
      for (const record of records) yield { type: 'decision', record };
      lastSeq = newest;
    }
    if (view.stage !== lastStage || view.seq.lastBound !== lastBound) {
      lastStage = view.stage;
      lastBound = view.seq.lastBound;
      yield { type: 'stage', stage: view.stage, seq: view.seq.lastBound, view };
    }
    if (view.stage === STAGE.closed) return;
    // A terminated or failed workflow never reaches 'Closed'; ask Temporal every couple of seconds.
    if (polls % 8 === 0 && (await reader.describe(sessionId)).executionStatus !== 'RUNNING') return;
    if (!(await pause(interval, options.signal))) return;
  }
}

/** Sleeps; resolves false instead if the signal aborts first. */
async function pause(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal?.aborted) return false;
  try {
    await sleep(ms, undefined, signal ? { signal } : {});
    return true;
  } catch {
    return false;
  }
}
