// JSON-RPC framing and method dispatch for MCP 2026-07-28. Transports hand it parsed messages;
// handlers are registered by app/, so this module never imports resources/.
import type { z } from 'zod';
import type { Principal } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import type { LeadingStatement } from '../leading-statement.js';
import type { ConsentOutcome, InputParams } from './input-required.js';
import {
  describeIssues,
  parseMessage,
  truncate,
  validateMetaShape,
  validateVersion,
} from './message-checks.js';
import { Results } from './results.js';
import {
  type Implementation,
  type InboundMessage,
  type RequestId,
  type RequestMeta,
} from './wire.js';
import { KeptResult, type RawJson } from './raw-json.js';
import {
  readNoticeOptions,
  RequestNotices,
  type NoticeSink,
} from './request-notices.js';
import { StreamingResult, type ResponseStream } from './stream.js';
import { toWireError, type WireError } from './wire-error.js';

/** Per-request context handed to a handler. Transport-agnostic by design (ROADMAP design rules). */
export interface RequestContext {
  readonly id: RequestId;
  readonly meta: RequestMeta;
  readonly principal: Principal;
  /** Aborted when the client cancels (HTTP: stream closed; stdio: notifications/cancelled). */
  readonly signal: AbortSignal;
  /** Whether the client has cancelled, read without making the signal (most handlers only check). */
  readonly aborted: boolean;
  /** Progress and log notices about this request's work, on its own stream (spec §11, §12). */
  readonly notices: RequestNotices;
  /** db/ reports each statement the request ran: a debug notice (its name and timing, no values). */
  statementRan(name: string, ms: number, rows: number): void;
  /** db/ takes the transport's leading statement into the request's first transaction on its database. */
  takeLeadingStatement(
    db: LeadingStatement['db'],
  ): LeadingStatement | undefined;
}

/**
 * The consent gate as a tool or a prompt asks it (resources/ consent.ts, bound to the request's
 * method): may the request read `target`, given the retry's answers in `input`?
 */
export type ConsentCheck = (
  ctx: RequestContext,
  target: string,
  input: InputParams,
) => Promise<ConsentOutcome>;

/** A method handler: validated params in, result payload out (without resultType/_meta, added here). */
export interface MethodHandler<TParams> {
  readonly params: z.ZodType<TParams>;
  handle(
    params: TParams,
    ctx: RequestContext,
  ): Promise<Record<string, unknown> | KeptResult | StreamingResult>;
  /**
   * The result never changes for the life of the process (server/discover): it is computed and
   * serialized once, and every request still passes all the checks before getting it.
   */
  readonly constant?: boolean;
  /** The same, for the requests whose params this says yes to (tools/list without a cursor). */
  constantFor?(params: TParams): boolean;
}

export type JsonRpcResponse =
  | { jsonrpc: '2.0'; id: RequestId; result: Record<string, unknown> | RawJson }
  | { jsonrpc: '2.0'; id?: RequestId; error: WireError['error'] };

/** What a transport gets back for one inbound message. */
export type DispatchOutcome =
  | { kind: 'response'; response: JsonRpcResponse; httpStatus: number }
  /** A long-lived answer: the transport must attach() a sink, or cancel() it if it cannot. */
  | { kind: 'stream'; id: RequestId; stream: ResponseStream }
  | { kind: 'accepted' };

export interface Dispatcher {
  /** Validate one parsed JSON value as a JSON-RPC message; throws ProtocolError for bad envelopes. */
  parse(value: unknown): InboundMessage;
  /** Run a request or notification to completion. Never throws. */
  dispatch(
    message: InboundMessage,
    transport: TransportContext,
  ): Promise<DispatchOutcome>;
  /** Build the error outcome for something thrown before dispatch (parse errors, header checks). */
  fail(error: unknown, id?: RequestId): DispatchOutcome;
  /**
   * A JSON-RPC response from the client, to a request this server sent it (an elicitation/create
   * of a 2025-11-25 session): settles it. Absent where the server sends the client no requests.
   */
  answer?(value: unknown): void;
  /** The client can send nothing more (stdin ended): stop waiting for its answers. */
  inputEnded?(): void;
}

/** What ties a server log line to a request: its id and incoming W3C trace context. */
export interface RequestLogFields {
  readonly requestId?: RequestId | undefined;
  readonly traceparent?: string | undefined;
}

/** The request's `_meta.traceparent` when it is a well-formed W3C one (anything else is not logged). */
export function metaTraceparent(message: InboundMessage): string | undefined {
  const meta = message.params?.['_meta'];
  const value =
    typeof meta === 'object' && meta !== null
      ? (meta as Record<string, unknown>)['traceparent']
      : undefined;
  return typeof value === 'string' &&
    /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/.test(value)
    ? value
    : undefined;
}

/** What a transport supplies with each message. */
export interface TransportContext {
  readonly principal: Principal;
  readonly signal: AbortSignal;
  /** Whether the client has cancelled, if the transport can say without making `signal`. */
  readonly aborted?: boolean;
  /**
   * Transport-level checks that need the validated `_meta` (HTTP: MCP-Protocol-Version, Mcp-Method,
   * Mcp-Name against the body). Runs after the `_meta` check and before the version check, the order
   * the 2026-07-28 conformance suite expects. Throws ProtocolError (HEADER_MISMATCH).
   */
  readonly verifyRequest?: (message: InboundMessage) => void;
  /**
   * Write a notification on this request's own stream before its response (HTTP: the POST turns
   * into an SSE response; stdio: a line). Absent when the transport cannot (the client accepts
   * only JSON): progress and log notices are then not sent.
   */
  readonly notify?: NoticeSink | undefined;
  /**
   * A statement the transport needs run for this request (an HTTP session's check), sent
   * first in the request's first transaction, in the same round trip; `settle` gets its rows.
   */
  readonly leadingStatement?: LeadingStatement | undefined;
}

export interface DispatcherOptions {
  readonly serverInfo: Implementation;
  // A heterogeneous map: each entry was type-checked against its own params schema (createMethod),
  // and the dispatcher hands each handler only what that schema parsed.
  readonly methods: ReadonlyMap<string, MethodHandler<unknown>>;
  /** Logs internal errors with their cause; never sent to clients. `fields` name the request. */
  readonly logError: (
    message: string,
    error: unknown,
    fields?: RequestLogFields,
  ) => void;
}

/** Type-checks a handler against its params schema at the registration site. */
export function createMethod<TParams>(
  handler: MethodHandler<TParams>,
): MethodHandler<TParams> {
  return handler;
}

const SILENT = new RequestNotices(undefined, undefined, undefined);

/** A request's notices; most requests opt in to neither and share one that sends nothing. */
function noticesFor(
  meta: RequestMeta,
  transport: TransportContext,
): RequestNotices {
  const { token, level } = readNoticeOptions(meta);
  return token === undefined && level === undefined
    ? SILENT
    : new RequestNotices(token, level, transport.notify);
}

/** The error outcome for anything thrown; internal causes go to the log with the request's fields. */
function failure(
  logError: DispatcherOptions['logError'],
  error: unknown,
  { id, fields }: { id?: RequestId; fields?: RequestLogFields },
): DispatchOutcome {
  const wire = toWireError(error, (message, cause) =>
    logError(message, cause, fields),
  );
  const response: JsonRpcResponse =
    id === undefined
      ? { jsonrpc: '2.0', error: wire.error }
      : { jsonrpc: '2.0', id, error: wire.error };
  return { kind: 'response', response, httpStatus: wire.httpStatus };
}

/** Build the dispatcher: the single place requests become results or wire errors. */
export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const results = new Results(options.serverInfo);

  const fail = (error: unknown, id?: RequestId, fields?: RequestLogFields) =>
    failure(options.logError, error, { id, fields });

  async function dispatchRequest(
    message: InboundMessage,
    id: RequestId,
    transport: TransportContext,
  ): Promise<DispatchOutcome> {
    const { method, meta, params } = checkRequest(
      options.methods,
      message,
      transport,
    );
    const constant =
      method.constant === true || method.constantFor?.(params) === true;
    const cached = constant ? results.constantOf(method) : undefined;
    if (cached !== undefined) return respond(id, cached);
    const ctx = new HandlerContext(id, meta, transport);
    let payload;
    try {
      payload = await method.handle(params, ctx);
    } finally {
      ctx.notices.close();
    }
    if (payload instanceof StreamingResult)
      return { kind: 'stream', id, stream: payload.stream };
    if (payload instanceof KeptResult)
      return respond(id, results.kept(payload));
    return respond(
      id,
      constant
        ? results.keepConstant(method, payload)
        : results.complete(payload),
    );
  }

  async function dispatch(
    message: InboundMessage,
    transport: TransportContext,
  ): Promise<DispatchOutcome> {
    // Client notifications need no answer; the only one defined (notifications/cancelled) is a
    // transport concern (stdio handles it; on HTTP, closing the stream is the cancel).
    if (message.id === undefined) return { kind: 'accepted' };
    const id = message.id;
    try {
      return await dispatchRequest(message, id, transport);
    } catch (error) {
      return fail(error, id, {
        requestId: id,
        traceparent: metaTraceparent(message),
      });
    }
  }

  return {
    parse: parseMessage,
    dispatch,
    fail: (error, id) => fail(error, id),
  };
}

/**
 * A request's handler, `_meta` and validated params, or the ProtocolError that refuses it. Order
 * matters (spec §2.2, §14.2 and the conformance suite): unknown method, then `_meta` shape, then
 * transport headers against the body, then protocol version, then params.
 */
function checkRequest(
  methods: DispatcherOptions['methods'],
  message: InboundMessage,
  transport: TransportContext,
): { method: MethodHandler<unknown>; meta: RequestMeta; params: unknown } {
  const method = methods.get(message.method);
  if (method === undefined) {
    throw new ProtocolError(
      'METHOD_NOT_FOUND',
      `Method not found: ${truncate(message.method)}.`,
    );
  }
  const meta = validateMetaShape(message.params?.['_meta']);
  transport.verifyRequest?.(message);
  validateVersion(meta);
  readNoticeOptions(meta);
  // `_meta` rides along: params schemas are zod objects, which drop keys they do not name.
  const params = method.params.safeParse(message.params ?? {});
  if (!params.success) {
    throw new ProtocolError(
      'INVALID_PARAMS',
      `Invalid params: ${describeIssues(params.error)}.`,
    );
  }
  return { method, meta, params: params.data };
}

/** A successful response. */
function respond(
  id: RequestId,
  result: Record<string, unknown> | RawJson,
): DispatchOutcome {
  return {
    kind: 'response',
    response: { jsonrpc: '2.0', id, result },
    httpStatus: 200,
  };
}

/**
 * A handler's RequestContext; the transport's signal is read on use (transports may make it on
 * first use). A class rather than an object literal with getters: V8 allocates a literal's
 * accessor pair in the old generation each time, which keeps every request's young objects alive
 * until a full collection.
 */
class HandlerContext implements RequestContext {
  readonly principal: Principal;
  /** Progress and log notices; most requests share one that sends nothing (noticesFor). */
  readonly notices: RequestNotices;
  readonly #transport: TransportContext;
  #leading: LeadingStatement | undefined;

  constructor(
    readonly id: RequestId,
    readonly meta: RequestMeta,
    transport: TransportContext,
  ) {
    this.notices = noticesFor(meta, transport);
    this.principal = transport.principal;
    this.#transport = transport;
    this.#leading = transport.leadingStatement;
  }

  statementRan(name: string, ms: number, rows: number): void {
    if (this.notices.wantsLog('debug'))
      this.notices.log('debug', 'pg', {
        statement: name,
        ms: Math.round(ms * 10) / 10,
        rows,
      });
  }

  get signal(): AbortSignal {
    return this.#transport.signal;
  }

  /** The transport's leading statement, to the request's first transaction on its database only. */
  takeLeadingStatement(
    db: LeadingStatement['db'],
  ): LeadingStatement | undefined {
    const leading = this.#leading;
    if (leading?.db !== db) return undefined;
    this.#leading = undefined;
    return leading;
  }

  get aborted(): boolean {
    return this.#transport.aborted ?? this.#transport.signal.aborted;
  }
}
