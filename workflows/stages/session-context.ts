/** What the stages of an input need from the running Session. */
import type { SessionActivityProxies } from './activity-proxies.js';
import type { Lookahead } from '../understanding/lookahead.js';
import type { Speculation } from '../agent/speculation.js';
import type { UsageMeter } from '../ledger/accounting.js';
import type { SessionState } from '../../contract/state.js';
import type { StageShow } from './stage-runner.js';

export interface SessionContext {
  readonly state: SessionState;
  readonly activities: SessionActivityProxies;
  /** The task queue this Session runs on (sub-sessions start on it). */
  readonly taskQueue: string;
  /** Shows a stage in the Web UI's current details and reports the stages an input runs as events. */
  readonly show: StageShow;
  /** Whether the Session should continue as new now (a waiting turn parks for it). */
  readonly shouldContinueAsNew: () => boolean;
  /** Runs an activity call that the `interrupt` command can cancel. */
  readonly cancellable: <T>(fn: () => Promise<T>) => Promise<T>;
  /** Relevance judged ahead for queued inputs; null in Sessions started before it existed. */
  readonly lookahead: Lookahead | null;
  /** The agent's first step sent beside the relevance call on a continue-shaped Session (speculation.ts). */
  readonly speculation: Speculation;
  /** Patches asked at the run's start (session.ts) for behaviour that begins later in an input. */
  readonly patches: { readonly combinedUnderstanding: boolean; readonly compactionBeside: boolean };
  /** Counts model usage toward the Session and the input being processed, and tells calls their budget. */
  readonly meter: UsageMeter;
}
