// Legacy (2025-11-25) Streamable HTTP sessions (legacy digest §5): Mcp-Session-Id issued by
// initialize, checked against the shared session store on every request, the session's GET stream
// for notifications, DELETE to end it. The HTTP transport reaches it as its other era's route.
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import type { Principal } from '../../auth/index.js';
import { ProtocolError, type ErrorKey } from '../../errors.js';
import {
  CancelledParamsSchema,
  serializeMessage,
  type InboundMessage,
} from '../../protocol/index.js';
import type { HttpEraRoute, HttpExchange } from '../../transport/index.js';
import type { LegacyAdapter } from '../era/legacy-adapter.js';
import { hasModernClaim, isModernVersion } from '../era/legacy-codec.js';
import { LEGACY_VERSIONS, LegacySession } from '../session/legacy-session.js';
import {
  HeldSessions,
  type Held,
  type HeldSessionsOptions,
} from './held-sessions.js';
import {
  answersWithSse,
  header,
  sendOutcome,
  sendOutcomeAsSse,
} from './legacy-http-answers.js';
import {
  checksInRequest,
  Flight,
  keyOf,
  samePrincipal,
} from './session-flight.js';
import type { SessionCheck } from './session-records.js';

/** What the held sessions need (their error form comes from the adapter), and the adapter. */
export interface LegacyHttpOptions extends Omit<HeldSessionsOptions, 'fail'> {
  readonly adapter: LegacyAdapter;
}

/** The 2025-11-25 sessions' route on the shared endpoint (legacy digest §10.2). */
export interface LegacyHttp extends HttpEraRoute {
  /** Issue 35: sessions this process holds now (pgmcp_legacy_sessions). */
  readonly held: number;
  /**
   * The store's channel named a session that changed (issue 34 point 1): ended, subscribed, its
   * stream claimed elsewhere. The replica holding its stream reads it again and acts.
   */
  sessionChanged(payload: unknown): void;
  /** The channel's listener reconnected: every session with a stream here is read again. */
  resync(): void;
  /** The channel's switch: LISTENed only while this process holds a session. */
  watch(want: (on: boolean) => Promise<void>): void;
}

export function createLegacyHttp(options: LegacyHttpOptions): LegacyHttp {
  return new LegacyHttpSessions(options);
}

class LegacyHttpSessions implements LegacyHttp {
  readonly #options: LegacyHttpOptions;
  readonly #held: HeldSessions;

  constructor(options: LegacyHttpOptions) {
    this.#options = options;
    this.#held = new HeldSessions({
      ...options,
      fail: (error) => options.adapter.fail(error),
    });
  }

  claims(message: InboundMessage, request: http.IncomingMessage): boolean {
    if (hasModernClaim(message)) return false;
    const version = header(request, 'mcp-protocol-version');
    if (version !== undefined && isModernVersion(version)) return false;
    // initialize and initialized exist only in the legacy era: without a session, the latter is
    // refused (400) rather than accepted by the modern path.
    return (
      message.method === 'initialize' ||
      message.method === 'notifications/initialized' ||
      header(request, 'mcp-session-id') !== undefined
    );
  }

  async post(message: InboundMessage, exchange: HttpExchange): Promise<void> {
    const { principal, request, response } = exchange;
    const id = header(request, 'mcp-session-id');
    if (id === undefined) {
      if (message.method === 'initialize' && message.id !== undefined)
        await this.#initialize(message, principal, response);
      else
        this.#refuse(
          response,
          'SESSION_REQUIRED',
          'Bad request: send Mcp-Session-Id, or initialize to start a session.',
        );
      return;
    }
    if (this.#cancelHeld(id, message, principal)) {
      response.writeHead(202).end();
      return;
    }
    const sse = answersWithSse(request, message);
    const held = this.#held.get(id);
    if (held !== undefined && checksInRequest(message, held.session)) {
      if (!this.#refusesVersion(request, response))
        await this.#inSession(held, message, {
          exchange,
          sse,
          check: this.#options.records.check(id, principal),
        });
      return;
    }
    const entry = await this.#sessionOf(id, exchange);
    if (entry !== undefined)
      await this.#inSession(entry, message, { exchange, sse });
  }

  async postResponse(value: unknown, exchange: HttpExchange): Promise<void> {
    const { request, response } = exchange;
    const id = header(request, 'mcp-session-id') ?? '';
    const entry = await this.#sessionOf(id, exchange);
    if (entry === undefined) return;
    // Only this session's own waits can be settled. An answer to nothing awaited here (late, or
    // to a request another replica sent) is accepted and dropped; that replica's wait times out.
    entry.session.requests.answer(value);
    response.writeHead(202).end();
  }

  /** The session a request names, else undefined once the refusal (400, 404) has been sent. */
  async #sessionOf(
    id: string,
    { principal, request, response }: HttpExchange,
  ): Promise<Held | undefined> {
    if (this.#refusesVersion(request, response)) return undefined;
    const entry = await this.#held.resume(id, principal);
    if (entry === undefined)
      this.#refuse(
        response,
        'SESSION_NOT_FOUND',
        'Session not found: it ended or expired; initialize a new one.',
      );
    return entry;
  }

  /**
   * A cancel of a request this process is answering, from its sender, stops it without touching
   * the database: it must get through when the pool is busy with the very statement it stops.
   */
  #cancelHeld(
    id: string,
    message: InboundMessage,
    principal: Principal,
  ): boolean {
    if (
      message.method !== 'notifications/cancelled' ||
      message.id !== undefined
    )
      return false;
    const parsed = CancelledParamsSchema.safeParse(message.params ?? {});
    if (!parsed.success) return false;
    const flight = this.#held
      .get(id)
      ?.inFlight.get(keyOf(parsed.data.requestId));
    if (flight === undefined || !samePrincipal(flight.principal, principal))
      return false;
    flight.cancel();
    return true;
  }

  /** GET (the session's stream) or DELETE (end the session). */
  async other(exchange: HttpExchange): Promise<void> {
    const { principal, request, response } = exchange;
    request.resume();
    const id = header(request, 'mcp-session-id');
    if (id === undefined) {
      this.#refuse(
        response,
        'SESSION_REQUIRED',
        'Bad request: GET and DELETE need the Mcp-Session-Id of a session.',
      );
      return;
    }
    if (request.method === 'DELETE') {
      await this.#delete(id, exchange);
      return;
    }
    const entry = await this.#sessionOf(id, exchange);
    // The newest GET stream of a session wins, on whichever replica (legacy digest §5.4: either
    // side may close a stream): a client whose stream broke unseen reopens it at once.
    if (entry !== undefined)
      await this.#held.claimStream(id, entry, { principal, response });
  }

  get held(): number {
    return this.#held.size;
  }

  sessionChanged(payload: unknown): void {
    this.#held.changed(payload);
  }

  resync(): void {
    this.#held.resync();
  }

  watch(want: (on: boolean) => Promise<void>): void {
    this.#held.watch(want);
  }

  close(): void {
    this.#held.close();
  }

  #refuse(response: http.ServerResponse, key: ErrorKey, message: string): void {
    sendOutcome(
      response,
      this.#options.adapter.fail(new ProtocolError(key, message)),
    );
  }

  /**
   * MCP-Protocol-Version after initialize (legacy digest §5.8): a version this server does not
   * speak is 400 naming those it does; absent means the session's negotiated one. True once refused.
   */
  #refusesVersion(
    request: http.IncomingMessage,
    response: http.ServerResponse,
  ): boolean {
    const version = header(request, 'mcp-protocol-version');
    if (version === undefined || LEGACY_VERSIONS.includes(version))
      return false;
    this.#refuse(
      response,
      'UNSUPPORTED_LEGACY_VERSION',
      `Unsupported MCP-Protocol-Version ${version.slice(0, 40)}; supported: ${LEGACY_VERSIONS.join(', ')}.`,
    );
    return true;
  }

  /** initialize without a session: a new one, stored for every replica, its id in Mcp-Session-Id. */
  async #initialize(
    message: InboundMessage,
    principal: Principal,
    response: http.ServerResponse,
  ): Promise<void> {
    try {
      this.#held.checkRoom();
    } catch (error) {
      sendOutcome(response, this.#options.adapter.fail(error, message.id));
      return;
    }
    // 256 bits from the CSPRNG, visible ASCII (base64url).
    const id = randomBytes(32).toString('base64url');
    const session = new LegacySession(id);
    const outcome = await this.#options.adapter.handle(message, session, {
      principal,
      signal: new AbortController().signal,
    });
    const handshake = session.handshake;
    if (handshake === undefined) {
      sendOutcome(response, outcome);
      return;
    }
    let opened: boolean;
    try {
      opened = await this.#options.records.open(id, principal, {
        protocolVersion: handshake.protocolVersion,
        clientInfo: handshake.clientInfo,
        clientCapabilities: handshake.capabilities,
      });
    } catch (error) {
      // The store's own refusals keep their status: UNAVAILABLE (a lock held past the lock
      // timeout, issue 32 point 8; an unreachable database) is 503 with Retry-After.
      if (!(error instanceof ProtocolError)) throw error;
      sendOutcome(response, this.#options.adapter.fail(error, message.id));
      return;
    }
    if (!opened) {
      const refusal = new ProtocolError(
        'TOO_MANY_SESSIONS',
        'Too many open sessions for this role; end one (DELETE) or wait for one to expire.',
      );
      sendOutcome(response, this.#options.adapter.fail(refusal, message.id));
      return;
    }
    this.#held.add(id, session, principal);
    response.setHeader('Mcp-Session-Id', id);
    sendOutcome(response, outcome);
  }

  /** A notification in a session: 202, after a cancel or the adapter has taken it. */
  async #notification(
    entry: Held,
    message: InboundMessage,
    { principal, response }: HttpExchange,
  ): Promise<void> {
    if (message.method === 'notifications/cancelled') {
      // A legacy client cancels explicitly; unknown or finished ids are ignored (§8.4).
      const parsed = CancelledParamsSchema.safeParse(message.params ?? {});
      if (parsed.success)
        entry.inFlight.get(keyOf(parsed.data.requestId))?.cancel();
    } else
      await this.#options.adapter.handle(message, entry.session, {
        principal,
        signal: new AbortController().signal,
      });
    response.writeHead(202).end();
  }

  /**
   * Answer a request of a live session. With `check` (checksInRequest), the session is checked in
   * the request's own transaction and the answer waits for that check: 404 if the session is gone.
   */
  async #inSession(
    entry: Held,
    message: InboundMessage,
    turn: {
      readonly exchange: HttpExchange;
      /** Answer as SSE (answersWithSse). */
      readonly sse: boolean;
      readonly check?: SessionCheck;
    },
  ): Promise<void> {
    const { exchange, sse, check } = turn;
    const { principal, response } = exchange;
    if (message.id === undefined) {
      await this.#notification(entry, message, exchange);
      return;
    }
    const key = keyOf(message.id);
    const flight = new Flight(principal, response, check);
    entry.inFlight.set(key, flight);
    try {
      const outcome = await this.#options.adapter.handle(
        message,
        entry.session,
        flight,
      );
      if (
        check !== undefined &&
        !(await this.#stillLive(entry, check, response))
      )
        return;
      // A cancelled request gets no response (§8.4).
      if (flight.streaming)
        response.end(
          !flight.aborted && outcome.kind === 'response'
            ? `data: ${serializeMessage(outcome.response)}\n\n`
            : undefined,
        );
      else if (flight.aborted) response.writeHead(202).end();
      else if (sse) sendOutcomeAsSse(response, outcome);
      else sendOutcome(response, outcome);
    } finally {
      if (entry.inFlight.get(key) === flight) entry.inFlight.delete(key);
    }
  }

  /** Whether the checked session is still live (renewed when due); else the 404 is sent. */
  async #stillLive(
    entry: Held,
    check: SessionCheck,
    response: http.ServerResponse,
  ): Promise<boolean> {
    if (!(await check.result())) {
      this.#refuse(
        response,
        'SESSION_NOT_FOUND',
        'Session not found: it ended or expired; initialize a new one.',
      );
      return false;
    }
    entry.lastSeen = Date.now();
    return true;
  }

  async #delete(
    id: string,
    { principal, request, response }: HttpExchange,
  ): Promise<void> {
    if (this.#refusesVersion(request, response)) return;
    if (!(await this.#options.records.close(id, principal))) {
      this.#refuse(
        response,
        'SESSION_NOT_FOUND',
        'Session not found: it ended or expired.',
      );
      return;
    }
    const entry = this.#held.get(id);
    if (entry !== undefined) this.#held.drop(id, entry);
    response.writeHead(204).end();
  }
}
