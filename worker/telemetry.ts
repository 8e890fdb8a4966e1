/**
 * The worker process's telemetry, installed once before any connection exists: the SDK runtime's
 * Prometheus endpoint (HARNESS_METRICS_PORT), which also exports the Session's own metrics
 * (workflows/ledger/metrics.ts, activities/metrics.ts), and a logger that forwards the SDK's native logs
 * and writes JSON lines (HARNESS_LOG_FORMAT=json) whose fields include the workflow and run ids
 * the SDK attaches to workflow and activity logs.
 */
import { DefaultLogger, Runtime, makeTelemetryFilterString, type LogEntry, type LogLevel } from '@temporalio/worker';
import type { HarnessConfig } from './config.js';

/** One log entry as a JSON line; bigint and Error values are made printable. */
export function jsonLogLine(entry: LogEntry): string {
  // Activity logs name the run `workflowRunId`; one `runId` field lets a log query join both kinds.
  // The task token is a long opaque blob of no use to a reader.
  const { sdkComponent, taskToken: _taskToken, ...meta } = (entry.meta ?? {}) as Record<string, unknown>;
  if (meta.workflowRunId !== undefined && meta.runId === undefined) meta.runId = meta.workflowRunId;
  return JSON.stringify(
    {
      time: new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString(),
      level: entry.level,
      msg: entry.message,
      ...(sdkComponent !== undefined ? { component: sdkComponent } : {}),
      ...meta,
    },
    (_key, value: unknown) => {
      if (typeof value === 'bigint') return value.toString();
      if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
      return value;
    },
  );
}

function textLogLine(entry: LogEntry): string {
  const { workflowId, runId } = (entry.meta ?? {}) as { workflowId?: string; runId?: string };
  const ids = workflowId ? ` [${workflowId} ${runId ?? ''}]` : '';
  return `${new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString()} ${entry.level}${ids} ${entry.message}`;
}

/**
 * Installs the SDK runtime with the configured logger and metrics. Returns the Prometheus scrape
 * URL, if any. Must run before the first NativeConnection; a second call throws (the SDK's rule).
 */
export function installTelemetry(telemetry: HarnessConfig['telemetry']): { metricsUrl: string | undefined } {
  const write =
    telemetry.logFormat === 'json'
      ? (entry: LogEntry) => process.stdout.write(`${jsonLogLine(entry)}\n`)
      : (entry: LogEntry) => process.stderr.write(`${textLogLine(entry)}\n`);
  const level: LogLevel = telemetry.logLevel;
  const bindAddress =
    telemetry.metricsPort !== undefined ? `${telemetry.metricsHost}:${telemetry.metricsPort}` : undefined;
  Runtime.install({
    logger: new DefaultLogger(level, write),
    telemetryOptions: {
      // Core's own logs (connections, pollers) go through the same logger instead of straight to stderr.
      logging: { forward: {}, filter: makeTelemetryFilterString({ core: level === 'TRACE' ? 'DEBUG' : level }) },
      ...(bindAddress ? { metrics: { prometheus: { bindAddress } } } : {}),
    },
  });
  const host = telemetry.metricsHost === '0.0.0.0' ? '127.0.0.1' : telemetry.metricsHost;
  return { metricsUrl: bindAddress ? `http://${host}:${telemetry.metricsPort}/metrics` : undefined };
}
