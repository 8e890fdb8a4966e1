/**
 * Optional OpenTelemetry tracing (OTEL_EXPORTER_OTLP_ENDPOINT): Temporal's interceptors
 * (@temporalio/interceptors-opentelemetry) put a span around each workflow run, signal, update,
 * activity start and activity execution, carry the trace context in Temporal headers from the
 * workflow to its activities, and export the spans as OTLP/HTTP (JSON) to `<endpoint>/v1/traces`.
 *
 * Workflow code runs in the SDK's sandbox: its spans are made there by the interceptor module
 * (TRACING_WORKFLOW_MODULE in worker/workflow-bundles.ts, which must be bundled with the workflows)
 * and handed out through the `exporter` sink, which the worker injects. Activity spans are made in
 * this process. Both go through one batch processor, which `shutdown` flushes. Only a worker with
 * tracing on loads this module.
 */
import { context, propagation, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/worker/index.js';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry/lib/workflow/definitions.js';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client/index.js';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';

/** The OTLP/HTTP traces URL for an OTEL_EXPORTER_OTLP_ENDPOINT base URL (the spec's rule: append `v1/traces`). */
export function tracesUrl(endpoint: string): string {
  return `${endpoint.endsWith('/') ? endpoint : `${endpoint}/`}v1/traces`;
}

export interface Tracing {
  /** Where spans go. */
  url: string;
  tracer: Tracer;
  /** For Worker.create: `activity` interceptors (the workflow module is bundled separately). */
  activityInterceptors: ActivityInterceptorsFactory[];
  /** For Worker.create: the sink that takes the workflow sandbox's spans. */
  sinks: InjectedSinks<OpenTelemetrySinks>;
  /** For the worker's own Client (sub-session hand-overs): carries the activity's trace into the other Session. */
  clientInterceptor: WorkflowClientInterceptor;
  /** Exports what is still buffered and stops the exporter. */
  shutdown(): Promise<void>;
}

let globalsInstalled = false;

/**
 * The process-wide parts the interceptors rely on: an AsyncLocalStorage context manager (so an
 * activity's span is the active one while it runs, and reaches its logs) and the W3C propagator
 * (which reads and writes the trace context in Temporal headers). An embedder that registered its
 * own keeps them: the OpenTelemetry API refuses a second registration.
 */
function installGlobals(): void {
  if (globalsInstalled) return;
  globalsInstalled = true;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  );
}

export function startTracing(options: { endpoint: string; serviceName: string }): Tracing {
  installGlobals();
  const url = tracesUrl(options.endpoint);
  const resource = Resource.default().merge(new Resource({ 'service.name': options.serviceName }));
  // OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_TIMEOUT are read by the exporter itself,
  // OTEL_BSP_* (batch size, delay) by the processor.
  const processor = new BatchSpanProcessor(new OTLPTraceExporter({ url }));
  const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  const tracer = provider.getTracer('session-harness');
  return {
    url,
    tracer,
    activityInterceptors: [
      (ctx) => ({
        inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer }),
        outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
      }),
    ],
    sinks: { exporter: makeWorkflowExporter(processor, resource) },
    clientInterceptor: new OpenTelemetryWorkflowClientInterceptor({ tracer }),
    shutdown: () => provider.shutdown(),
  };
}
