// The 2025-11-25 era as an adapter at the protocol edge (legacy digest §10, §11): initialize,
// ping, subscribe and setLevel here; every other method of its table (legacy-methods.ts) goes to
// the same modern dispatcher and handlers, and the answer is reshaped to the 2025-11-25 wire.
import type { Principal } from '../../auth/index.js';
import { ProtocolError } from '../../errors.js';
import {
  LOG_LEVELS,
  type DispatchOutcome,
  type Dispatcher,
  type Implementation,
  type InboundMessage,
  type LogLevel,
  type TransportContext,
} from '../../protocol/index.js';
import type { SubscribeCaller } from '../legacy-subscriptions.js';
import type { LegacySession } from '../session/legacy-session.js';
import {
  asModern,
  ok,
  SharedTransport,
  toLegacyOutcome,
  legacyError,
} from './legacy-codec.js';
import { negotiate } from './legacy-handshake.js';
import {
  DEFAULT_INPUT_TIMEOUT_MS,
  forVersion,
  inputRequired,
  MAX_INPUT_ROUNDS,
  readInputRequest,
  requireCapability,
  settle,
} from './legacy-input.js';
import { LEGACY_METHODS } from './legacy-methods.js';

/** What the composition root supplies: subscriptions live with the fan-out, not here. */
export interface LegacyAdapterOptions {
  /** The modern dispatcher whose handlers legacy requests share. */
  readonly dispatcher: Dispatcher;
  readonly serverInfo: Implementation;
  readonly capabilities: Record<string, unknown>;
  readonly instructions: string;
  /** Check `uri` is readable by the caller (else RESOURCE_NOT_FOUND) and start delivering it. */
  readonly subscribe: (
    session: LegacySession,
    uri: string,
    caller: SubscribeCaller,
  ) => Promise<void>;
  /** Stop delivering `uri` to the session (harmless when not subscribed). */
  readonly unsubscribe: (
    session: LegacySession,
    uri: string,
    caller: SubscribeCaller,
  ) => Promise<void>;
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
    if (LEGACY_METHODS.get(method)?.by === 'shared')
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
        await this.options.subscribe(session, stringParam(params, 'uri'), {
          principal: transport.principal,
          signal: transport.signal,
        });
        session.log('debug', { subscribed: params['uri'] });
        return {};
      case 'resources/unsubscribe':
        await this.options.unsubscribe(session, stringParam(params, 'uri'), {
          principal: transport.principal,
          signal: transport.signal,
        });
        return {};
      case 'logging/setLevel': {
        const level = logLevel(params['level']);
        await session.inTurn(async () => {
          session.logLevel = level;
          await this.options.persist?.(session, transport.principal);
        });
        return {};
      }
      default:
        throw new ProtocolError(
          'METHOD_NOT_FOUND',
          `Method not found: ${message.method.slice(0, 100)}.`,
        );
    }
  }
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
