/**
 * Metrics recorded where the activities run, through the activity context's metric meter, so they
 * go wherever the worker's runtime exports (HARNESS_METRICS_PORT) and carry the SDK's
 * `namespace`, `task_queue` and `activity_type` tags.
 */
import { Context } from '@temporalio/activity';

export const ACTIVITY_METRIC = {
  modelLatency: 'harness_model_latency',
  toolCalls: 'harness_tool_calls',
  // Named with Prometheus' `_total` counter suffix, which the SDK's exporter does not add itself.
  modelTokens: 'harness_model_tokens_total',
  modelCost: 'harness_model_cost_microusd_total',
  modelConfigErrors: 'harness_model_config_errors_total',
} as const;

/** The token kinds `harness_model_tokens` counts; cached is part of prompt, reasoning part of completion. */
export const TOKEN_KINDS = ['prompt', 'completion', 'cached', 'reasoning'] as const;

/**
 * Counts one model call's tokens by role, model, kind and `speculative` (an agent step sent before
 * the decision, workflows/speculation.ts), and its cost in micro-USD (the metric meter's counters are
 * integers) when the price table knows the model.
 */
export function recordModelUsage(
  role: string,
  usage: {
    model: string;
    promptTokens: number;
    completionTokens: number;
    cachedTokens: number;
    reasoningTokens: number;
  },
  costUsd: number | null,
  speculative = false,
): void {
  const meter = Context.current().metricMeter;
  const counter = meter.createCounter(
    ACTIVITY_METRIC.modelTokens,
    'tokens',
    'Model tokens, by role, model, kind and speculative',
  );
  const flag = String(speculative);
  const byKind = {
    prompt: usage.promptTokens,
    completion: usage.completionTokens,
    cached: usage.cachedTokens,
    reasoning: usage.reasoningTokens,
  };
  for (const kind of TOKEN_KINDS) counter.add(byKind[kind], { role, model: usage.model, kind, speculative: flag });
  if (costUsd !== null) {
    meter
      .createCounter(
        ACTIVITY_METRIC.modelCost,
        'microusd',
        'Model cost in micro-USD (price table), by role, model and speculative',
      )
      .add(Math.round(costUsd * 1e6), { role, model: usage.model, speculative: flag });
  }
}

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

/**
 * Counts one model call the endpoint refused for its configuration (FAILURE.ModelConfigError), by
 * role: a wrong provider profile shows here before anyone reads a decision record.
 */
export function recordModelConfigError(role: string): void {
  Context.current()
    .metricMeter.createCounter(
      ACTIVITY_METRIC.modelConfigErrors,
      'calls',
      'Model calls refused for an unsupported parameter or value, by role',
    )
    .add(1, { role });
}
