// Each MCP request observed once, in either era (issue 35): its duration histogram, its span (MCP
// semantic conventions) and, in JSON log mode, its access-log line. No URIs, tokens or values.
import type { Logger } from '../log.js';
import {
  currentTraceId,
  METRICS,
  traceRequest,
} from '../observability/index.js';
import {
  metaTraceparent,
  type Dispatcher,
  type DispatchOutcome,
  type InboundMessage,
  type TransportContext,
} from '../protocol/index.js';

const MODERN = '2026-07-28';

/** Refusals that are a configured limit, counted in pgmcp_limits_hit_total by their key. */
const LIMIT_KEYS = new Set([
  'PAYLOAD_TOO_LARGE',
  'POOL_EXHAUSTED',
  'TOO_MANY_STREAMS',
  'TOO_MANY_SESSIONS',
  'TIMEOUT',
]);

/** Methods a metric label may name: the spec's, else "other" (a client may send any string). */
const KNOWN_METHODS = new Set([
  'initialize',
  'ping',
  'server/discover',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'subscriptions/listen',
  'completion/complete',
  'prompts/list',
  'prompts/get',
  'tools/list',
  'tools/call',
  'logging/setLevel',
  'notifications/initialized',
  'notifications/cancelled',
]);

/** `dispatcher` with every request observed as 2026-07-28 traffic. */
export function observeModern(
  dispatcher: Dispatcher,
  logger: Logger,
): Dispatcher {
  return {
    parse: (value) => dispatcher.parse(value),
    fail: (error, id) => dispatcher.fail(error, id),
    dispatch: (message, transport) =>
      observeRequest({ message, transport, logger, era: MODERN }, () =>
        dispatcher.dispatch(message, transport),
      ),
    ...(dispatcher.answer === undefined
      ? {}
      : { answer: (value: unknown) => dispatcher.answer?.(value) }),
    ...(dispatcher.inputEnded === undefined
      ? {}
      : { inputEnded: () => dispatcher.inputEnded?.() }),
  };
}

/** One request: the span around `dispatch`, the histogram and the access log after it. */
export async function observeRequest(
  request: {
    readonly message: InboundMessage;
    readonly transport: TransportContext;
    readonly logger: Logger;
    readonly era: string;
    readonly sessionId?: string | undefined;
  },
  dispatch: () => Promise<DispatchOutcome>,
): Promise<DispatchOutcome> {
  const { message, transport, logger, era } = request;
  if (message.id === undefined || message.id === null) return dispatch(); // a notification
  const started = performance.now();
  const method = KNOWN_METHODS.has(message.method) ? message.method : 'other';
  const traceparent = metaTraceparent(message);
  return traceRequest(
    {
      method,
      target: targetOf(message),
      protocolVersion: era,
      requestId: message.id,
      sessionId: request.sessionId,
      traceparent,
    },
    async (end) => {
      const outcome = await dispatch();
      const errorType = errorTypeOf(outcome);
      end(errorType);
      const seconds = (performance.now() - started) / 1000;
      const result = errorType === undefined ? 'ok' : 'error';
      METRICS.operationDuration.observe(
        {
          mcp_method_name: method,
          mcp_protocol_version: era,
          outcome: result,
          error_type: errorType ?? '',
        },
        seconds,
      );
      if (errorType !== undefined && LIMIT_KEYS.has(errorType))
        METRICS.limitsHit.inc({ limit: errorType });
      logger.access?.({
        method,
        era,
        outcome: result,
        ...(errorType === undefined ? {} : { errorType }),
        durationMs: Math.round(seconds * 100_000) / 100,
        role: transport.principal.role ?? '(login)',
        requestId: message.id ?? null,
        traceId: currentTraceId() ?? traceIdOf(traceparent),
      });
      return outcome;
    },
  );
}

/** The error key a failed outcome carries (data.code), else its JSON-RPC code; undefined if it succeeded. */
function errorTypeOf(outcome: DispatchOutcome): string | undefined {
  if (outcome.kind !== 'response') return undefined;
  const { response } = outcome;
  if (!('error' in response) || response.error === undefined) {
    // A tool's own failure is a result with isError (spec): the tool_error type of the conventions.
    const result = (response as { result?: { isError?: unknown } }).result;
    return result?.isError === true ? 'tool_error' : undefined;
  }
  const error = response.error as {
    code: number;
    data?: Record<string, unknown>;
  };
  const key = error.data?.['code'];
  return typeof key === 'string' ? key : String(error.code);
}

/** tools/call's and prompts/get's name: a span name's target (never a URI, which may say too much). */
function targetOf(message: InboundMessage): string | undefined {
  if (message.method !== 'tools/call' && message.method !== 'prompts/get')
    return undefined;
  const name = message.params?.['name'];
  return typeof name === 'string' && name.length <= 128 ? name : undefined;
}

function traceIdOf(traceparent: string | undefined): string | null {
  return traceparent?.split('-')[1] ?? null;
}
