/**
 * A small OTLP/HTTP trace receiver on 127.0.0.1: accepts `POST /v1/traces` with the JSON encoding
 * of ExportTraceServiceRequest (what @opentelemetry/exporter-trace-otlp-http sends) and keeps every
 * span with its resource's attributes. Any other request is answered 404 and counted.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

type AnyValue = { stringValue?: string; intValue?: number | string; boolValue?: boolean; doubleValue?: number };
type KeyValue = { key: string; value: AnyValue };

export interface ReceivedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  attributes: Record<string, unknown>;
  /** Resource attributes, e.g. `service.name`. */
  resource: Record<string, unknown>;
}

function flatten(attributes: KeyValue[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of attributes ?? []) {
    out[key] = value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue;
  }
  return out;
}

interface ExportRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: Array<{
      spans?: Array<{
        name: string;
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        attributes?: KeyValue[];
      }>;
    }>;
  }>;
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Content types of accepted export requests. */
  readonly contentTypes: string[] = [];
  /** Requests to anything but `POST /v1/traces`. */
  unexpected = 0;

  /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it; set by `start`. */
  endpoint = '';
  private readonly server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        this.unexpected++;
        res.writeHead(404).end();
        return;
      }
      this.accept(req.headers['content-type'] ?? '', Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });

  private constructor() {}

  static async start(): Promise<OtlpReceiver> {
    const receiver = new OtlpReceiver();
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    receiver.endpoint = `http://127.0.0.1:${(receiver.server.address() as AddressInfo).port}`;
    return receiver;
  }

  private accept(contentType: string, body: string): void {
    this.contentTypes.push(contentType);
    const request = JSON.parse(body) as ExportRequest;
    for (const rs of request.resourceSpans ?? []) {
      const resource = flatten(rs.resource?.attributes);
      for (const ss of rs.scopeSpans ?? []) {
        for (const span of ss.spans ?? []) {
          this.spans.push({
            name: span.name,
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId || undefined,
            attributes: flatten(span.attributes),
            resource,
          });
        }
      }
    }
  }

  /** The spans with this name. */
  named(name: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.name === name);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
