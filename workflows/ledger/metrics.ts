/**
 * The Session's own metrics, emitted from workflow code through the SDK's workflow metric meter.
 * That meter drops calls made while a history is replayed, so a worker restart or a cache eviction
 * never counts a decision twice. The worker exports them with the SDK's (HARNESS_METRICS_PORT);
 * the SDK adds `namespace`, `task_queue` and `workflow_type` to every series.
 *
 * Approvals waiting is a pair of counters rather than a gauge: a gauge set by one Session would be
 * overwritten by the next on the same worker. `requested - resolved` summed over workers is the
 * number waiting, wherever each Session moved in between.
 */
import { metricMeter } from '@temporalio/workflow';
import type { Decision } from '../../contract/state.js';

/** Metric names, as a Prometheus scrape shows them (the exporter may add a unit suffix such as `_total`). */
export const METRIC = {
  decisions: 'harness_session_decisions',
  degraded: 'harness_session_degraded',
  approvalsRequested: 'harness_session_approvals_requested',
  approvalsResolved: 'harness_session_approvals_resolved',
  speculativeSteps: 'harness_session_speculative_steps',
  speculativeDiscardedTokens: 'harness_session_speculative_discarded_tokens',
} as const;

/** Created lazily: the meter exists only inside a workflow context, not when this module is imported. */
let counters:
  | {
      decisions: ReturnType<typeof metricMeter.createCounter>;
      degraded: ReturnType<typeof metricMeter.createCounter>;
      approvalsRequested: ReturnType<typeof metricMeter.createCounter>;
      approvalsResolved: ReturnType<typeof metricMeter.createCounter>;
      speculativeSteps: ReturnType<typeof metricMeter.createCounter>;
      speculativeDiscardedTokens: ReturnType<typeof metricMeter.createCounter>;
    }
  | undefined;

function meters() {
  counters ??= {
    decisions: metricMeter.createCounter(METRIC.decisions, 'decisions', 'Task-control decisions, by kind'),
    degraded: metricMeter.createCounter(
      METRIC.degraded,
      'failures',
      'Helper-model steps that fell back (relevance degrades the decision; the others keep state), by role',
    ),
    approvalsRequested: metricMeter.createCounter(
      METRIC.approvalsRequested,
      'approvals',
      'Tool calls suspended for approval',
    ),
    approvalsResolved: metricMeter.createCounter(
      METRIC.approvalsResolved,
      'approvals',
      'Suspended tool calls approved or rejected, by outcome',
    ),
    speculativeSteps: metricMeter.createCounter(
      METRIC.speculativeSteps,
      'steps',
      'Agent steps started beside the relevance call, by outcome (adopted or discarded)',
    ),
    speculativeDiscardedTokens: metricMeter.createCounter(
      METRIC.speculativeDiscardedTokens,
      'tokens',
      'Tokens of discarded speculative agent steps whose usage was known, by kind (prompt or completion)',
    ),
  };
  return counters;
}

/** One input's decision record was completed with `decision`. */
export function recordDecision(decision: Decision): void {
  meters().decisions.add(1, { decision });
}

/** A helper-model step of `role` failed and its fallback was used (`reason`: a short failure kind). */
export function recordDegraded(role: string, reason?: string): void {
  meters().degraded.add(1, reason ? { role, reason } : { role });
}

/** A tool call was suspended until an `approval` signal arrives. */
export function recordApprovalRequested(tool: string): void {
  meters().approvalsRequested.add(1, { tool });
}

/** A suspended tool call was approved or rejected. */
export function recordApprovalResolved(tool: string, approved: boolean): void {
  meters().approvalsResolved.add(1, { tool, outcome: approved ? 'approved' : 'rejected' });
}

/**
 * A speculative agent step was adopted or discarded; a discarded one's tokens, when known, are
 * counted too (the activity's `harness_model_tokens` already has them under `speculative="true"`).
 */
export function recordSpeculation(
  outcome: 'adopted' | 'discarded',
  usage?: { promptTokens: number; completionTokens: number },
): void {
  const m = meters();
  m.speculativeSteps.add(1, { outcome });
  if (outcome === 'discarded' && usage) {
    m.speculativeDiscardedTokens.add(usage.promptTokens, { kind: 'prompt' });
    m.speculativeDiscardedTokens.add(usage.completionTokens, { kind: 'completion' });
  }
}
