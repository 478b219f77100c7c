// The 2025-11-25 era as an adapter at the protocol edge (legacy digest §10, §11): initialize,
// ping, subscribe and setLevel here; every other method goes to the same modern dispatcher and
// handlers, and the answer is reshaped to the 2025-11-25 wire (no resultType, ttlMs, cacheScope).
import type { Principal } from '../auth/index.js';
import { JSONRPC, ProtocolError } from '../errors.js';
import type {
  DispatchOutcome,
  Dispatcher,
  JsonRpcResponse,
  TransportContext,
} from './dispatch.js';
import { RawJson } from './raw-json.js';
import { META_LOG_LEVEL } from './request-notices.js';
import {
  LEGACY_VERSIONS,
  type LegacyHandshake,
  type LegacySession,
} from './legacy-state.js';
import { LOG_LEVELS, type LogLevel } from './log-levels.js';
import {
  META_CLIENT_CAPABILITIES,
  META_PROTOCOL_VERSION,
  PROTOCOL_VERSION,
  SUPPORTED_VERSIONS,
  type Implementation,
  type InboundMessage,
} from './wire.js';

/** Methods a legacy session reaches through the shared modern handlers. */
const SHARED_METHODS = new Set([
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'completion/complete',
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
]);
/** Most input_required answers one legacy request goes through before it must be complete. */
const MAX_INPUT_ROUNDS = 4;
/** How long a request waits for the client's answer to a request of the server, by default. */
export const DEFAULT_INPUT_TIMEOUT_MS = 600_000;
/** The client capability each server-to-client request needs (legacy digest §3.3). */
const REQUIRED_CAPABILITY: Record<string, string> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
};
/** Result fields 2025-11-25 does not have (legacy digest §6.4). */
const MODERN_ONLY_FIELDS = ['resultType', 'ttlMs', 'cacheScope', '_meta'];

/** What the composition root supplies: subscriptions live with the fan-out, not here. */
export interface LegacyAdapterOptions {
  /** The modern dispatcher whose handlers legacy requests share. */
  readonly dispatcher: Dispatcher;
  readonly serverInfo: Implementation;
  readonly capabilities: Record<string, unknown>;
  readonly instructions: string;
  /** Check `uri` is readable by `principal` (else RESOURCE_NOT_FOUND) and start delivering it. */
  readonly subscribe: (
    session: LegacySession,
    uri: string,
    principal: Principal,
    signal: AbortSignal,
  ) => Promise<void>;
  readonly unsubscribe: (session: LegacySession, uri: string) => void;
  /** The session can now hear list_changed (initialized with a channel). */
  readonly attach: (session: LegacySession, principal: Principal) => void;
  /** The session's handshake changed (log level): persist it where sessions are stored. */
  readonly persist?: (
    session: LegacySession,
    principal: Principal,
  ) => Promise<void>;
  /**
   * How long a request waits for the client's answer to elicitation/create or
   * sampling/createMessage (a person may be typing); DEFAULT_INPUT_TIMEOUT_MS when absent.
   */
  readonly inputTimeoutMs?: number;
}

export interface LegacyAdapter {
  /** Serve one legacy message of `session`. Never throws. */
  handle(
    message: InboundMessage,
    session: LegacySession,
    transport: TransportContext,
  ): Promise<DispatchOutcome>;
  /** An error outcome in legacy form (codes and HTTP status). */
  fail(error: unknown, id?: InboundMessage['id']): DispatchOutcome;
}

/** Whether a message carries the 2026-07-28 envelope claim (legacy digest §10: the discriminator). */
export function hasModernClaim(message: InboundMessage): boolean {
  const meta = message.params?.['_meta'];
  return (
    typeof meta === 'object' &&
    meta !== null &&
    META_PROTOCOL_VERSION in (meta as Record<string, unknown>)
  );
}

/**
 * A parsed JSON-RPC response (no method, a result or an error): what a legacy client sends when it
 * answers a server request (legacy digest §2, §10.1 step 1). Modern clients never send one.
 */
export function isJsonRpcResponse(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return false;
  const record = value as Record<string, unknown>;
  return (
    record['jsonrpc'] === '2.0' &&
    !('method' in record) &&
    ('result' in record || 'error' in record)
  );
}

/** A version string that belongs to the modern era (sent in a header without the claim). */
export function isModernVersion(version: string): boolean {
  return SUPPORTED_VERSIONS.includes(version) || version >= PROTOCOL_VERSION;
}

export function createLegacyAdapter(
  options: LegacyAdapterOptions,
): LegacyAdapter {
  return new LegacyEraAdapter(options);
}

class LegacyEraAdapter implements LegacyAdapter {
  constructor(readonly options: LegacyAdapterOptions) {}

  /** Transport refusals (session missing, 404, 429) keep their HTTP status. */
  fail(error: unknown, id?: InboundMessage['id']): DispatchOutcome {
    const outcome = this.options.dispatcher.fail(error, id);
    return outcome.kind === 'response' && 'error' in outcome.response
      ? {
          ...outcome,
          response: legacyError(outcome.response, outcome.httpStatus).response,
        }
      : outcome;
  }

  async handle(
    message: InboundMessage,
    session: LegacySession,
    transport: TransportContext,
  ): Promise<DispatchOutcome> {
    if (message.id === undefined) {
      // notifications/cancelled is the transport's (it knows what is in flight).
      if (message.method === 'notifications/initialized')
        this.#initialized(session, transport.principal);
      return { kind: 'accepted' };
    }
    try {
      return await this.#request(
        { ...message, id: message.id },
        session,
        transport,
      );
    } catch (error) {
      // An error answering a request is a JSON-RPC error: HTTP 200 (legacy digest §5.9).
      return toLegacyOutcome(this.options.dispatcher.fail(error, message.id));
    }
  }

  /** A repeated notifications/initialized changes nothing. */
  #initialized(session: LegacySession, principal: Principal): void {
    if (session.handshake === undefined || session.ready) return;
    session.ready = true;
    if (session.channel === undefined) return;
    try {
      this.options.attach(session, principal);
    } catch {
      // The fan-out is at its caps: the session hears no list_changed until it subscribes.
      session.log('warning', {
        message: 'notifications are not available now',
      });
    }
  }

  async #request(
    message: InboundMessage & { id: NonNullable<InboundMessage['id']> },
    session: LegacySession,
    transport: TransportContext,
  ): Promise<DispatchOutcome> {
    const { method, id } = message;
    if (method === 'ping') return ok(id, {});
    if (method === 'initialize') {
      if (session.handshake !== undefined)
        throw new ProtocolError(
          'ALREADY_INITIALIZED',
          'Invalid request: this session is already initialized; start a new one to initialize again.',
        );
      session.handshake = negotiate(message.params);
      return ok(id, {
        protocolVersion: session.handshake.protocolVersion,
        capabilities: this.options.capabilities,
        serverInfo: this.options.serverInfo,
        instructions: this.options.instructions,
      });
    }
    // Before initialize, a request without the claim gets exactly today's modern answer
    // (-32601 or -32602 missing _meta, legacy digest §10.1 step 5).
    if (session.handshake === undefined)
      return this.options.dispatcher.dispatch(message, transport);
    if (SHARED_METHODS.has(method))
      return this.#shared(message, session, transport);
    return ok(id, await this.#sessionMethod(message, session, transport));
  }

  /**
   * A shared handler's answer in legacy form. An input_required answer (a person's consent, a
   * fixture's question) becomes what 2025-11-25 has instead: each input request is sent to the
   * client as a request of its own on this request's stream, and the handler is asked again
   * with the answers and its requestState, as a 2026-07-28 client would retry.
   */
  async #shared(
    message: InboundMessage,
    session: LegacySession,
    transport: TransportContext,
  ): Promise<DispatchOutcome> {
    let params = message.params;
    for (let round = 0; ; round += 1) {
      const outcome = await settle(
        await this.options.dispatcher.dispatch(
          asModern(message, params, session),
          new SharedTransport(transport),
        ),
        transport,
      );
      const input = inputRequired(outcome);
      if (input === undefined) return toLegacyOutcome(outcome);
      if (round === MAX_INPUT_ROUNDS)
        throw new ProtocolError(
          'INTERNAL',
          'A request asked for input more times than a legacy session allows.',
        );
      params = {
        ...message.params,
        inputResponses: await this.#ask(
          input.inputRequests,
          session,
          transport,
        ),
        ...(input.requestState === undefined
          ? {}
          : { requestState: input.requestState }),
      };
    }
  }

  /** Send each input request to the client (one at a time: a person answers them) and collect the results. */
  async #ask(
    inputRequests: Record<string, unknown>,
    session: LegacySession,
    transport: TransportContext,
  ): Promise<Record<string, unknown>> {
    const sink = transport.notify;
    const responses: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(inputRequests)) {
      const { method, params } = readInputRequest(value);
      requireCapability(session.handshake?.capabilities ?? {}, method, params);
      if (sink === undefined)
        throw new ProtocolError(
          'INTERNAL',
          'This transport cannot carry a request to the client.',
        );
      responses[key] = await session.requests.send({
        method,
        params: forVersion(session, method, params),
        sink,
        signal: transport.signal,
        timeoutMs: this.options.inputTimeoutMs ?? DEFAULT_INPUT_TIMEOUT_MS,
      });
    }
    return responses;
  }

  async #sessionMethod(
    message: InboundMessage,
    session: LegacySession,
    transport: TransportContext,
  ): Promise<Record<string, unknown>> {
    const params = message.params ?? {};
    switch (message.method) {
      case 'resources/subscribe':
        await this.options.subscribe(
          session,
          stringParam(params, 'uri'),
          transport.principal,
          transport.signal,
        );
        session.log('debug', { subscribed: params['uri'] });
        return {};
      case 'resources/unsubscribe':
        this.options.unsubscribe(session, stringParam(params, 'uri'));
        return {};
      case 'logging/setLevel':
        session.logLevel = logLevel(params['level']);
        await this.options.persist?.(session, transport.principal);
        return {};
      default:
        throw new ProtocolError(
          'METHOD_NOT_FOUND',
          `Method not found: ${message.method.slice(0, 100)}.`,
        );
    }
  }
}

function ok(
  id: NonNullable<InboundMessage['id']>,
  result: Record<string, unknown>,
): DispatchOutcome {
  return {
    kind: 'response',
    response: { jsonrpc: '2.0', id, result },
    httpStatus: 200,
  };
}

/** initialize params → the handshake (legacy digest §3.2): our version if we speak theirs, else our latest. */
function negotiate(
  params: Record<string, unknown> | undefined,
): LegacyHandshake {
  const requested = params?.['protocolVersion'];
  const capabilities = params?.['capabilities'];
  const clientInfo = params?.['clientInfo'] as Record<string, unknown> | null;
  if (
    typeof requested !== 'string' ||
    typeof capabilities !== 'object' ||
    capabilities === null ||
    typeof clientInfo !== 'object' ||
    clientInfo === null ||
    typeof clientInfo['name'] !== 'string' ||
    typeof clientInfo['version'] !== 'string'
  )
    throw new ProtocolError(
      'INVALID_PARAMS',
      'Invalid params: initialize needs protocolVersion, capabilities and clientInfo {name, version}.',
      { data: { supported: [...LEGACY_VERSIONS], requested } },
    );
  return {
    protocolVersion: LEGACY_VERSIONS.includes(requested)
      ? requested
      : (LEGACY_VERSIONS[0] as string),
    clientInfo: {
      name: clientInfo['name'].slice(0, 200),
      version: clientInfo['version'].slice(0, 200),
    },
    capabilities: keptCapabilities(capabilities as Record<string, unknown>),
  };
}

/**
 * The client capabilities a session keeps: only those pgmcp reads (elicitation and its modes,
 * sampling, roots), each reduced to what it reads, so an initialize cannot make the server (and
 * pgmcp.legacy_sessions) hold a capabilities object of any size (issue 32 point 10). An
 * elicitation that names only modes pgmcp does not know keeps one such name, so it still does
 * not count as form.
 */
function keptCapabilities(
  declared: Record<string, unknown>,
): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const name of ['elicitation', 'sampling', 'roots']) {
    const value = declared[name];
    if (typeof value !== 'object' || value === null) continue;
    const given = Object.keys(value);
    const modes: Record<string, object> = {};
    if (name === 'elicitation') {
      for (const mode of given)
        if (mode === 'form' || mode === 'url') modes[mode] = {};
      if (given.length > 0 && Object.keys(modes).length === 0)
        modes['other'] = {};
    }
    kept[name] = modes;
  }
  return kept;
}

/**
 * The request with the envelope the shared handlers expect; the client's own `_meta` (its
 * progressToken) rides along, and the session's logging/setLevel becomes the request's log level.
 */
function asModern(
  message: InboundMessage,
  params: Record<string, unknown> | undefined,
  session: LegacySession,
): InboundMessage {
  // Built by assignment, not spreads: a spread of objects of many shapes takes V8's slow path, and
  // this runs for every request of every session.
  const given = params?.['_meta'];
  const meta: Record<string, unknown> = {};
  if (typeof given === 'object' && given !== null) Object.assign(meta, given);
  meta[META_PROTOCOL_VERSION] = PROTOCOL_VERSION;
  meta[META_CLIENT_CAPABILITIES] = session.handshake?.capabilities ?? {};
  if (session.logLevel !== undefined) meta[META_LOG_LEVEL] = session.logLevel;
  const modern: Record<string, unknown> = {};
  if (params !== undefined) Object.assign(modern, params);
  modern['_meta'] = meta;
  return {
    jsonrpc: message.jsonrpc,
    id: message.id,
    method: message.method,
    params: modern,
  };
}

/**
 * What the shared handlers get of a legacy transport: its caller, notices and leading statement,
 * and its cancel read on use, so a request whose handler never asks for an AbortSignal makes none.
 */
class SharedTransport implements TransportContext {
  readonly principal: TransportContext['principal'];
  readonly notify: TransportContext['notify'];
  readonly leadingStatement: TransportContext['leadingStatement'];
  readonly #transport: TransportContext;

  constructor(transport: TransportContext) {
    this.principal = transport.principal;
    this.notify = transport.notify;
    this.leadingStatement = transport.leadingStatement;
    this.#transport = transport;
  }

  get signal(): AbortSignal {
    return this.#transport.signal;
  }

  get aborted(): boolean {
    return this.#transport.aborted ?? this.#transport.signal.aborted;
  }
}

/**
 * A request answered on its own stream (a tool call with a progressToken) as one legacy answer: its
 * notifications go out through the transport's notify (the POST's SSE answer, stdio lines) as
 * they come, and its final message is the response. A cancel drops the stream and the answer.
 */
function settle(
  outcome: DispatchOutcome,
  transport: TransportContext,
): Promise<DispatchOutcome> {
  if (outcome.kind !== 'stream') return Promise.resolve(outcome);
  const { stream } = outcome;
  return new Promise((resolve) => {
    const cancel = () => {
      stream.cancel();
      resolve({ kind: 'accepted' });
    };
    if (transport.signal.aborted) {
      cancel();
      return;
    }
    transport.signal.addEventListener('abort', cancel, { once: true });
    stream.attach({
      write: (message) => {
        transport.notify?.(message);
        return true;
      },
      pendingBytes: 0,
      onDrain: () => undefined,
      end: (finalMessage) => {
        transport.signal.removeEventListener('abort', cancel);
        resolve(
          finalMessage === undefined
            ? { kind: 'accepted' }
            : {
                kind: 'response',
                response: JSON.parse(finalMessage) as JsonRpcResponse,
                httpStatus: 200,
              },
        );
      },
    });
  });
}

/** An input_required answer's questions and state, or undefined for any other outcome. */
function inputRequired(
  outcome: DispatchOutcome,
):
  | { inputRequests: Record<string, unknown>; requestState?: string }
  | undefined {
  if (outcome.kind !== 'response' || !('result' in outcome.response))
    return undefined;
  const { result } = outcome.response;
  if (result instanceof RawJson || result['resultType'] !== 'input_required')
    return undefined;
  const { inputRequests, requestState } = result;
  if (typeof inputRequests !== 'object' || inputRequests === null)
    throw new ProtocolError(
      'INTERNAL',
      'An input_required result has no inputRequests.',
    );
  return {
    inputRequests: inputRequests as Record<string, unknown>,
    ...(typeof requestState === 'string' ? { requestState } : {}),
  };
}

function readInputRequest(value: unknown): {
  method: string;
  params: Record<string, unknown>;
} {
  const record =
    typeof value === 'object' && value !== null
      ? (value as Record<string, unknown>)
      : {};
  const { method, params } = record;
  if (
    typeof method !== 'string' ||
    typeof params !== 'object' ||
    params === null
  )
    throw new ProtocolError(
      'INTERNAL',
      'An input request has no method or params.',
    );
  return { method, params: params as Record<string, unknown> };
}

/**
 * The same refusal as the 2026-07-28 era (-32021 naming what is missing) when the session's
 * initialize did not declare what `method` needs; form elicitation is `elicitation: {}` or `form`.
 */
function requireCapability(
  capabilities: Record<string, unknown>,
  method: string,
  params: Record<string, unknown>,
): void {
  const name = REQUIRED_CAPABILITY[method];
  if (name === undefined)
    throw new ProtocolError(
      'INTERNAL',
      `No client capability is known for ${method}.`,
    );
  const declared = capabilities[name];
  let required: Record<string, unknown> = { [name]: {} };
  let ok = typeof declared === 'object' && declared !== null;
  if (name === 'elicitation') {
    const mode = params['mode'] === 'url' ? 'url' : 'form';
    const modes = (declared ?? {}) as Record<string, unknown>;
    required = { elicitation: { [mode]: {} } };
    ok &&=
      mode in modes || (mode === 'form' && Object.keys(modes).length === 0);
  }
  if (!ok)
    throw new ProtocolError(
      'MISSING_CLIENT_CAPABILITY',
      `This request needs to send the client ${method}, which this session's initialize did not declare.`,
      { data: { requiredCapabilities: required } },
    );
}

/** Before 2025-11-25 an elicitation had no `mode` (form was the only one). */
function forVersion(
  session: LegacySession,
  method: string,
  params: Record<string, unknown>,
): Record<string, unknown> {
  if (
    method !== 'elicitation/create' ||
    session.handshake?.protocolVersion === LEGACY_VERSIONS[0]
  )
    return params;
  const { mode: _mode, ...rest } = params;
  return rest;
}

/** A modern outcome in 2025-11-25 form: result fields stripped, legacy error codes and statuses. */
function toLegacyOutcome(outcome: DispatchOutcome): DispatchOutcome {
  if (outcome.kind === 'stream') {
    // No shared method streams; never let one reach a legacy client.
    outcome.stream.cancel();
    throw new ProtocolError('INTERNAL', 'A legacy request produced a stream.');
  }
  if (outcome.kind !== 'response') return outcome;
  const response = outcome.response;
  if ('result' in response) {
    const modern =
      response.result instanceof RawJson
        ? (JSON.parse(response.result.json) as Record<string, unknown>)
        : response.result;
    // A new object without the 2026-only members (deleting them would leave V8 a slower object
    // for the serializer to walk).
    const result: Record<string, unknown> = {};
    for (const key of Object.keys(modern))
      if (!MODERN_ONLY_FIELDS.includes(key)) result[key] = modern[key];
    return { ...outcome, response: { ...response, result } };
  }
  return { ...outcome, ...legacyError(response, outcome.httpStatus) };
}

function legacyError(
  response: Extract<JsonRpcResponse, { error: unknown }>,
  httpStatus: number,
): { response: JsonRpcResponse; httpStatus: number } {
  const key = response.error.data?.['code'];
  // 2025-11-25 has no -32021 (legacy digest §0.11): a missing client capability is an invalid
  // request there, still naming what is missing in data.requiredCapabilities.
  const code =
    key === 'RESOURCE_NOT_FOUND'
      ? JSONRPC.LEGACY_RESOURCE_NOT_FOUND
      : key === 'MISSING_CLIENT_CAPABILITY'
        ? JSONRPC.INVALID_REQUEST
        : response.error.code;
  // Legacy HTTP answers JSON-RPC errors with 200 (digest §5.9); transport-level statuses stay, and
  // so does a missing scope's 403, the step-up challenge (digest §9).
  const status =
    httpStatus >= 429 || key === 'INSUFFICIENT_SCOPE' ? httpStatus : 200;
  return {
    response: { ...response, error: { ...response.error, code } },
    httpStatus: status,
  };
}

function stringParam(params: Record<string, unknown>, name: string): string {
  const value = params[name];
  if (typeof value !== 'string')
    throw new ProtocolError(
      'INVALID_PARAMS',
      `Invalid params: ${name} must be a string.`,
    );
  return value;
}

function logLevel(value: unknown): LogLevel {
  if (LOG_LEVELS.includes(value as LogLevel)) return value as LogLevel;
  throw new ProtocolError(
    'INVALID_PARAMS',
    `Invalid params: level must be one of ${LOG_LEVELS.join(', ')}.`,
  );
}
