// Legacy (2025-11-25) Streamable HTTP sessions (legacy digest §5): Mcp-Session-Id issued by
// initialize, checked against the shared session store on every request, the session's GET stream
// for notifications, DELETE to end it. Knows no MCP method beyond initialize and cancelled.
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import { principalIdentity, type Principal } from '../auth/index.js';
import { ProtocolError, type ErrorKey } from '../errors.js';
import {
  CancelledParamsSchema,
  hasModernClaim,
  isModernVersion,
  LEGACY_VERSIONS,
  LegacySession,
  serializeMessage,
  type DispatchOutcome,
  type InboundMessage,
  type LeadingStatement,
  type LegacyAdapter,
  type LogLevel,
  type StreamSink,
  type TransportContext,
} from '../protocol/index.js';
import type { HttpEraRoute } from './http-options.js';
import { AnsweredRequest } from './http-request-context.js';
import { send } from './http-responses.js';
import { SSE_HEADERS } from './sse-stream.js';

/** A stored session: what initialize settled, as another replica reads it back. */
export interface LegacySessionRecord {
  readonly protocolVersion: string;
  readonly clientInfo: unknown;
  readonly clientCapabilities: unknown;
  readonly logLevel: string | null;
}

/** The shared session store (db/legacy-sessions.ts); every call checks the principal binding. */
export interface LegacySessionRecords {
  open(
    id: string,
    principal: Principal,
    session: Omit<LegacySessionRecord, 'logLevel'>,
  ): Promise<boolean>;
  touch(
    id: string,
    principal: Principal,
  ): Promise<LegacySessionRecord | undefined>;
  /**
   * `touch` in the request's own transaction: `statement` goes first in its round trip, `result`
   * reads the session on its own only when the request ran no statement.
   */
  check(
    id: string,
    principal: Principal,
  ): {
    readonly statement: LeadingStatement;
    /** Whether the session is live (and this principal's); renewed when due. */
    result(): Promise<boolean>;
  };
  close(id: string, principal: Principal): Promise<boolean>;
}

export interface LegacyHttpOptions {
  readonly adapter: LegacyAdapter;
  readonly records: LegacySessionRecords;
  /** Registers a session's GET stream with the fan-out, and takes it off. */
  readonly subscriptions: {
    attach(session: LegacySession, principal: Principal): void;
    detach(session: LegacySession): void;
  };
  /** Most sessions this process holds at once. */
  readonly maxSessions: number;
  readonly idleMs: number;
  readonly keepAliveMs: number;
  readonly log: (line: string) => void;
}

/** The 2025-11-25 sessions' route on the shared endpoint (legacy digest §10.2). */
export interface LegacyHttp extends HttpEraRoute {
  /** Issue 35: sessions this process holds now (pgmcp_legacy_sessions). */
  readonly held: number;
}

/** One session as this process holds it: state, requests in flight, the GET stream if here. */
interface Held {
  readonly session: LegacySession;
  /** Requests being answered, by id: their cancel, and who sent them. */
  readonly inFlight: Map<string, Flight>;
  lastSeen: number;
  stream: http.ServerResponse | undefined;
  streamPrincipal: Principal | undefined;
}

export function createLegacyHttp(options: LegacyHttpOptions): LegacyHttp {
  return new LegacyHttpSessions(options);
}

class LegacyHttpSessions implements LegacyHttp {
  readonly #options: LegacyHttpOptions;
  readonly #held = new Map<string, Held>();
  readonly #sweep: NodeJS.Timeout;

  constructor(options: LegacyHttpOptions) {
    this.#options = options;
    this.#sweep = setInterval(
      () => this.#sweepIdle(),
      Math.max(1000, Math.floor(options.idleMs / 3)),
    );
    this.#sweep.unref();
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

  async post(
    message: InboundMessage,
    principal: Principal,
    request: http.IncomingMessage,
    response: http.ServerResponse,
  ): Promise<void> {
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
        await this.#inSession(
          held,
          message,
          principal,
          response,
          sse,
          this.#options.records.check(id, principal),
        );
      return;
    }
    const entry = await this.#sessionOf(id, principal, request, response);
    if (entry !== undefined)
      await this.#inSession(entry, message, principal, response, sse);
  }

  async postResponse(
    value: unknown,
    principal: Principal,
    request: http.IncomingMessage,
    response: http.ServerResponse,
  ): Promise<void> {
    const id = header(request, 'mcp-session-id') ?? '';
    const entry = await this.#sessionOf(id, principal, request, response);
    if (entry === undefined) return;
    // Only this session's own waits can be settled. An answer to nothing awaited here (late, or
    // to a request another replica sent) is accepted and dropped; that replica's wait times out.
    entry.session.requests.answer(value);
    response.writeHead(202).end();
  }

  /** The session a request names, else undefined once the refusal (400, 404) has been sent. */
  async #sessionOf(
    id: string,
    principal: Principal,
    request: http.IncomingMessage,
    response: http.ServerResponse,
  ): Promise<Held | undefined> {
    if (this.#refusesVersion(request, response)) return undefined;
    const entry = await this.#resume(id, principal);
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
  async other(
    principal: Principal,
    request: http.IncomingMessage,
    response: http.ServerResponse,
  ): Promise<void> {
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
      await this.#delete(id, principal, request, response);
      return;
    }
    const entry = await this.#sessionOf(id, principal, request, response);
    if (entry === undefined) return;
    if (entry.stream !== undefined)
      this.#refuse(
        response,
        'SESSION_STREAM_OPEN',
        'Conflict: this session already has a GET stream open.',
      );
    else this.#openStream(entry, principal, response);
  }

  get held(): number {
    return this.#held.size;
  }

  close(): void {
    clearInterval(this.#sweep);
    for (const [id, entry] of this.#held) this.#drop(id, entry);
  }

  #refuse(
    response: http.ServerResponse,
    key: ErrorKey,
    message: string,
    id?: InboundMessage['id'],
  ): void {
    sendOutcome(
      response,
      this.#options.adapter.fail(new ProtocolError(key, message), id),
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

  /** The live session `id` of `principal` (renewed), held here; undefined for anyone else's. */
  async #resume(id: string, principal: Principal): Promise<Held | undefined> {
    const record = await this.#options.records.touch(id, principal);
    if (record === undefined) return undefined;
    let entry = this.#held.get(id);
    if (entry === undefined) {
      if (this.#held.size >= this.#options.maxSessions)
        throw tooMany(this.#options.maxSessions);
      const session = new LegacySession(id);
      session.handshake = {
        protocolVersion: record.protocolVersion,
        clientInfo: record.clientInfo as { name: string; version: string },
        capabilities: record.clientCapabilities as Record<string, unknown>,
      };
      // Created elsewhere: its initialized notification went to the replica that created it.
      session.ready = true;
      session.logLevel = (record.logLevel ?? undefined) as LogLevel | undefined;
      entry = held(session);
      this.#held.set(id, entry);
    }
    entry.lastSeen = Date.now();
    return entry;
  }

  async #initialize(
    message: InboundMessage,
    principal: Principal,
    response: http.ServerResponse,
  ): Promise<void> {
    if (this.#held.size >= this.#options.maxSessions) {
      sendOutcome(
        response,
        this.#options.adapter.fail(
          tooMany(this.#options.maxSessions),
          message.id,
        ),
      );
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
      this.#refuse(
        response,
        'TOO_MANY_SESSIONS',
        'Too many open sessions for this role; end one (DELETE) or wait for one to expire.',
        message.id,
      );
      return;
    }
    this.#held.set(id, held(session));
    response.setHeader('Mcp-Session-Id', id);
    sendOutcome(response, outcome);
  }

  /** A notification in a session: 202, after a cancel or the adapter has taken it. */
  async #notification(
    entry: Held,
    message: InboundMessage,
    principal: Principal,
    response: http.ServerResponse,
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
    principal: Principal,
    response: http.ServerResponse,
    sse: boolean,
    check?: SessionCheck,
  ): Promise<void> {
    if (message.id === undefined) {
      await this.#notification(entry, message, principal, response);
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
    principal: Principal,
    request: http.IncomingMessage,
    response: http.ServerResponse,
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
    if (entry !== undefined) this.#drop(id, entry);
    response.writeHead(204).end();
  }

  #openStream(
    entry: Held,
    principal: Principal,
    response: http.ServerResponse,
  ): void {
    const { session } = entry;
    session.channel = sseSink(response);
    entry.stream = response;
    entry.streamPrincipal = principal;
    try {
      this.#options.subscriptions.attach(session, principal);
    } catch (error) {
      session.channel = undefined;
      entry.stream = undefined;
      sendOutcome(response, this.#options.adapter.fail(error));
      return;
    }
    response.writeHead(200, [...SSE_HEADERS]);
    response.flushHeaders();
    const keepAlive = setInterval(() => {
      if (response.writableLength === 0) response.write(':\n\n');
    }, this.#options.keepAliveMs);
    keepAlive.unref();
    response.on('close', () => {
      clearInterval(keepAlive);
      if (entry.stream !== response) return;
      entry.stream = undefined;
      entry.streamPrincipal = undefined;
      session.channel = undefined;
      this.#options.subscriptions.detach(session);
    });
  }

  #drop(id: string, entry: Held): void {
    this.#held.delete(id);
    this.#options.subscriptions.detach(entry.session);
    for (const flight of entry.inFlight.values()) flight.cancel();
    entry.session.close();
  }

  /** Idle sessions leave this process; an open GET stream keeps its session alive in the store. */
  #sweepIdle(): void {
    const now = Date.now();
    for (const [id, entry] of this.#held) {
      const principal = entry.streamPrincipal;
      if (entry.stream !== undefined && principal !== undefined) {
        entry.lastSeen = now;
        this.#options.records.touch(id, principal).then(
          (record) => {
            if (record === undefined) this.#drop(id, entry);
          },
          (error: unknown) =>
            this.#options.log(
              `legacy session renewal failed: ${error instanceof Error ? error.message : String(error)}`,
            ),
        );
      } else if (
        now - entry.lastSeen >= this.#options.idleMs &&
        entry.inFlight.size === 0
      )
        this.#drop(id, entry);
    }
  }
}

type SessionCheck = ReturnType<LegacySessionRecords['check']>;

/**
 * One request of a session being answered (http-request-context.ts's AnsweredRequest: its sender,
 * its cancel, its notices), with the session's check. Notices (progress, log messages, a request
 * to the client) make the POST answer an SSE stream that ends with the response (legacy digest
 * §5.4). A request checked in its transaction sends none before that check has found its session
 * live: a question for the person (consent) waits for it, and a session found gone ends the
 * request.
 */
class Flight extends AnsweredRequest implements TransportContext {
  readonly leadingStatement: LeadingStatement | undefined;
  readonly #response: http.ServerResponse;
  readonly #check: SessionCheck | undefined;

  constructor(
    principal: Principal,
    response: http.ServerResponse,
    check: SessionCheck | undefined,
  ) {
    super(principal);
    this.#response = response;
    this.#check = check;
    this.leadingStatement = check?.statement;
  }

  readonly notify = (notice: string): void => {
    if (this.#check === undefined) this.writeNotice(this.#response, notice);
    else
      void this.#check.result().then(
        (live) =>
          live ? this.writeNotice(this.#response, notice) : this.cancel(),
        () => this.cancel(),
      );
  };
}

/**
 * Requests whose session check rides in their own request transaction (one round trip instead of
 * two): the read-only shared methods, in a session held here, when nothing can be sent before the
 * answer (no log level set, no progressToken). Their statements are read-only, so a request of a
 * session that turns out to be gone has changed nothing when it is refused.
 */
const CHECKED_IN_REQUEST = new Set([
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'prompts/list',
  'prompts/get',
  'completion/complete',
]);

function checksInRequest(
  message: InboundMessage,
  session: LegacySession,
): boolean {
  if (message.id === undefined || !CHECKED_IN_REQUEST.has(message.method))
    return false;
  if (session.logLevel !== undefined) return false;
  const meta = message.params?.['_meta'];
  return !(
    typeof meta === 'object' &&
    meta !== null &&
    'progressToken' in (meta as Record<string, unknown>)
  );
}

/** The same caller (auth's principalIdentity). */
function samePrincipal(a: Principal, b: Principal): boolean {
  return a === b || principalIdentity(a) === principalIdentity(b);
}

function held(session: LegacySession): Held {
  return {
    session,
    inFlight: new Map(),
    lastSeen: Date.now(),
    stream: undefined,
    streamPrincipal: undefined,
  };
}

function tooMany(limit: number): ProtocolError {
  return new ProtocolError(
    'TOO_MANY_SESSIONS',
    `Too many open sessions on this server (limit ${limit}); end one (DELETE) or try another replica.`,
  );
}

function keyOf(id: string | number): string {
  return `${typeof id}:${String(id)}`;
}

function header(
  request: http.IncomingMessage,
  name: string,
): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** A session's GET stream: each notification is one SSE `data:` event, no ids (§5.5). */
function sseSink(response: http.ServerResponse): StreamSink {
  return {
    write: (message) => response.write(`event: message\ndata: ${message}\n\n`),
    get pendingBytes() {
      return response.writableLength;
    },
    onDrain: (listener) => response.once('drain', listener),
    end: () => {
      if (!response.writableEnded) response.end();
    },
  };
}

/**
 * Whether to answer a request as SSE rather than JSON; the digest lets the server choose (§5.2).
 * JSON is one write and what every client reads, so it is the default; SSE when the client accepts
 * nothing else, or when it asked for progress, whose notifications can only precede the response on
 * the request's own stream (§5.3, §8.3).
 */
function answersWithSse(
  request: http.IncomingMessage,
  message: InboundMessage,
): boolean {
  const accept = header(request, 'accept') ?? '';
  if (!/text\/event-stream/i.test(accept)) return false;
  if (!/application\/json|\*\/\*|application\/\*/i.test(accept)) return true;
  const meta = message.params?.['_meta'];
  return (
    typeof meta === 'object' &&
    meta !== null &&
    'progressToken' in (meta as Record<string, unknown>)
  );
}

/** A request's answer as one SSE event, then the end of the stream (no event ids: §5.5). */
function sendOutcomeAsSse(
  response: http.ServerResponse,
  outcome: DispatchOutcome,
): void {
  // Transport-level refusals (429, 503) keep their status and JSON body.
  if (outcome.kind !== 'response' || outcome.httpStatus !== 200) {
    sendOutcome(response, outcome);
    return;
  }
  response.writeHead(200, [...SSE_HEADERS]);
  response.end(
    `event: message\ndata: ${serializeMessage(outcome.response)}\n\n`,
  );
}

function sendOutcome(
  response: http.ServerResponse,
  outcome: DispatchOutcome,
): void {
  if (outcome.kind === 'accepted') {
    response.writeHead(202).end();
    return;
  }
  if (outcome.kind === 'stream') {
    outcome.stream.cancel();
    response.writeHead(500).end();
    return;
  }
  send(response, outcome.httpStatus, outcome.response);
}
