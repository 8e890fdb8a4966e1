/**
 * Metrics recorded where the activities run, through the activity context's metric meter, so they
 * go wherever the worker's runtime exports (HARNESS_METRICS_PORT) and carry the SDK's
 * `namespace`, `task_queue` and `activity_type` tags.
 */
import { Context } from '@temporalio/activity';

export const ACTIVITY_METRIC = {
  modelLatency: 'harness_model_latency',
  toolCalls: 'harness_tool_calls',
} as const;

/** Records one model call's wall time in milliseconds, by role and outcome (`ok` or the failure type). */
export function recordModelCall(role: string, outcome: string, ms: number): void {
  Context.current()
    .metricMeter.createHistogram(ACTIVITY_METRIC.modelLatency, 'int', 'ms', 'Model call latency, by role and outcome')
    .record(Math.max(0, Math.round(ms)), { role, outcome });
}

/**
 * Counts one tool call that ran on a worker (runTool) by outcome: `ok`, `error` or `interrupted`.
 * Rejected calls never reach a worker; the workflow's approval counters count them.
 */
export function recordToolCall(tool: string, outcome: string): void {
  Context.current()
    .metricMeter.createCounter(ACTIVITY_METRIC.toolCalls, 'calls', 'Tool calls, by tool and outcome')
    .add(1, { tool, outcome });
}
