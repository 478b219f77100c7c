// OpenTelemetry traces (issue 35): the Node SDK started only when an OTEL_* variable asks for it,
// the request span (MCP semantic conventions) with its children, and the trace id PostgreSQL sees.
import {
  context,
  createContextKey,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type TimeInput,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ConsoleSpanExporter,
  NodeTracerProvider,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-node';
import { SERVER_INFO } from '../version.js';

const TRACER_NAME = 'pgmcp';
/** Where an HTTP request's arrival, incoming context and authentication time wait for its span. */
const ARRIVAL = createContextKey('pgmcp.http-arrival');

interface Arrival {
  readonly start: TimeInput;
  readonly parent: Context;
  authentication?: { start: TimeInput; end: TimeInput; failed: boolean };
}

let provider: NodeTracerProvider | undefined;

/** Whether traces are exported (the SDK was started): every hook is a plain call otherwise. */
export function tracingEnabled(): boolean {
  return provider !== undefined;
}

/**
 * Start the SDK when the environment asks for traces (OTEL_TRACES_EXPORTER other than none, or an
 * OTLP endpoint); otherwise nothing is loaded into the request path. Returns how to flush and stop.
 */
export function startTracing(
  env: NodeJS.ProcessEnv,
): { stop(): Promise<void> } | undefined {
  const exporterName = (env['OTEL_TRACES_EXPORTER'] ?? '').trim();
  const endpoint =
    env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] ??
    env['OTEL_EXPORTER_OTLP_ENDPOINT'];
  if (env['OTEL_SDK_DISABLED'] === 'true' || exporterName === 'none')
    return undefined;
  if (exporterName === '' && (endpoint === undefined || endpoint === ''))
    return undefined;
  const exporter: SpanExporter =
    exporterName === 'console'
      ? new ConsoleSpanExporter()
      : new OTLPTraceExporter();
  provider = new NodeTracerProvider({
    resource: resourceFromAttributes({
      'service.name': env['OTEL_SERVICE_NAME'] ?? 'pgmcp',
      'service.version': SERVER_INFO.version,
    }),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  provider.register({ propagator: new W3CTraceContextPropagator() });
  const started = provider;
  return {
    async stop() {
      await started.shutdown();
      if (provider === started) provider = undefined;
    },
  };
}

/**
 * Run an HTTP request's handling with its arrival time and the trace context of its headers
 * (W3C traceparent), for the request span made once the method is known.
 */
export function traceHttpRequest<T>(
  headers: Record<string, string | string[] | undefined>,
  handle: () => T,
): T {
  if (provider === undefined) return handle();
  const arrival: Arrival = {
    start: Date.now(),
    parent: propagation.extract(ROOT_CONTEXT, headers),
  };
  return context.with(context.active().setValue(ARRIVAL, arrival), handle);
}

/** Time the authentication of the HTTP request under way (a child span of its request span). */
export async function traceAuthentication<T>(
  authenticate: () => Promise<T> | T,
): Promise<T> {
  const arrival = context.active().getValue(ARRIVAL) as Arrival | undefined;
  if (arrival === undefined) return authenticate();
  const start = Date.now();
  try {
    const result = await authenticate();
    arrival.authentication = { start, end: Date.now(), failed: false };
    return result;
  } catch (error) {
    arrival.authentication = { start, end: Date.now(), failed: true };
    throw error;
  }
}

/** What names an MCP request's span (semantic conventions for MCP). */
export interface RequestSpanFields {
  readonly method: string;
  /** The tool, prompt or resource the method is about (tools/call's name), when it has one. */
  readonly target: string | undefined;
  readonly protocolVersion: string;
  readonly requestId: string | number | undefined;
  readonly sessionId: string | undefined;
  /** params._meta.traceparent, which the MCP conventions let a client send instead of a header. */
  readonly traceparent: string | undefined;
}

/** A request span's end: its outcome's error type, if it failed. */
export type EndRequestSpan = (errorType: string | undefined) => void;

/**
 * Start the request's span ("{mcp.method.name} {target}", kind SERVER), parented on `_meta`'s
 * traceparent, else the HTTP header's; run `work` inside it. Without the SDK, just `work`.
 */
export async function traceRequest<T>(
  fields: RequestSpanFields,
  work: (end: EndRequestSpan) => Promise<T>,
): Promise<T> {
  if (provider === undefined) return work(() => undefined);
  const arrival = context.active().getValue(ARRIVAL) as Arrival | undefined;
  const parent =
    fields.traceparent !== undefined
      ? propagation.extract(ROOT_CONTEXT, { traceparent: fields.traceparent })
      : (arrival?.parent ?? context.active());
  const tracer = trace.getTracer(TRACER_NAME, SERVER_INFO.version);
  const span = tracer.startSpan(
    fields.target === undefined
      ? fields.method
      : `${fields.method} ${fields.target}`,
    {
      kind: SpanKind.SERVER,
      startTime: arrival?.start,
      attributes: {
        'mcp.method.name': fields.method,
        'mcp.protocol.version': fields.protocolVersion,
        ...(fields.sessionId === undefined
          ? {}
          : { 'mcp.session.id': fields.sessionId }),
        ...(fields.requestId === undefined
          ? {}
          : { 'jsonrpc.request.id': String(fields.requestId) }),
        ...(fields.method === 'tools/call' && fields.target !== undefined
          ? { 'gen_ai.tool.name': fields.target }
          : {}),
      },
    },
    parent,
  );
  const inside = trace.setSpan(parent, span);
  if (arrival?.authentication !== undefined) {
    const { start, end, failed } = arrival.authentication;
    const auth = tracer.startSpan('authenticate', { startTime: start }, inside);
    if (failed) auth.setStatus({ code: SpanStatusCode.ERROR });
    auth.end(end);
  }
  let ended = false;
  const end: EndRequestSpan = (errorType) => {
    if (ended) return;
    ended = true;
    if (errorType !== undefined) {
      span.setAttribute('error.type', errorType);
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  };
  try {
    return await context.with(inside, () => work(end));
  } catch (error) {
    end(error instanceof Error ? error.name : 'unknown');
    throw error;
  } finally {
    end(undefined);
  }
}

/** Run `work` in a child span of the current one (a database transaction, a tool). */
export async function traceStep<T>(
  name: string,
  attributes: Record<string, string>,
  work: () => Promise<T>,
): Promise<T> {
  if (provider === undefined) return work();
  const span: Span = trace
    .getTracer(TRACER_NAME, SERVER_INFO.version)
    .startSpan(name, { kind: SpanKind.INTERNAL, attributes });
  try {
    return await context.with(trace.setSpan(context.active(), span), work);
  } catch (error) {
    span.setAttribute(
      'error.type',
      error instanceof Error ? error.name : 'unknown',
    );
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw error;
  } finally {
    span.end();
  }
}

/**
 * The application_name a traced request's transaction sets (transaction-local, so
 * pg_stat_activity and log_line_prefix %a show it while it runs): "pgmcp trace=<trace id>/<span
 * id>", 61 bytes (PostgreSQL keeps 63); undefined when nothing is traced.
 */
export function tracedApplicationName(): string | undefined {
  if (provider === undefined) return undefined;
  const span = trace.getActiveSpan();
  if (span === undefined) return undefined;
  const { traceId, spanId } = span.spanContext();
  return `pgmcp trace=${traceId}/${spanId}`;
}

/** The current trace id (for the access log), if a span is active. */
export function currentTraceId(): string | undefined {
  if (provider === undefined) return undefined;
  return trace.getActiveSpan()?.spanContext().traceId;
}
