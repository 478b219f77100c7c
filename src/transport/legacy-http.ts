// Legacy (2025-11-25) Streamable HTTP sessions (legacy digest §5): Mcp-Session-Id issued by
// initialize, checked against the shared session store on every request, the session's GET stream
// for notifications, DELETE to end it. Knows no MCP method beyond initialize and cancelled.
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import type { Principal } from '../auth/index.js';
import { ProtocolError, type ErrorKey } from '../errors.js';
import {
  CancelledParamsSchema,
  hasModernClaim,
  isModernVersion,
  LEGACY_VERSIONS,
  LegacySession,
  serializeMessageBytes,
  type DispatchOutcome,
  type InboundMessage,
  type LegacyAdapter,
  type LogLevel,
  type StreamSink,
} from '../protocol/index.js';

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

export interface LegacyHttp {
  /** Whether a parsed POST belongs to the legacy era (legacy digest §10.2 steps 2–5). */
  claims(message: InboundMessage, request: http.IncomingMessage): boolean;
  post(
    message: InboundMessage,
    principal: Principal,
    request: http.IncomingMessage,
    response: http.ServerResponse,
  ): Promise<void>;
  /** GET (the session's stream) or DELETE (end the session). */
  other(
    principal: Principal,
    request: http.IncomingMessage,
    response: http.ServerResponse,
  ): Promise<void>;
  close(): void;
}

/** One session as this process holds it: state, requests in flight, the GET stream if here. */
interface Held {
  readonly session: LegacySession;
  readonly inFlight: Map<string, AbortController>;
  lastSeen: number;
  stream: http.ServerResponse | undefined;
  streamPrincipal: Principal | undefined;
}

export function createLegacyHttp(options: LegacyHttpOptions): LegacyHttp {
  const held = new Map<string, Held>();
  const refuse = (
    response: http.ServerResponse,
    key: ErrorKey,
    message: string,
    id?: InboundMessage['id'],
  ): void =>
    sendOutcome(
      response,
      options.adapter.fail(new ProtocolError(key, message), id),
    );

  /** The live session `id` of `principal` (renewed), held here; undefined for anyone else's. */
  async function resume(
    id: string,
    principal: Principal,
  ): Promise<Held | undefined> {
    const record = await options.records.touch(id, principal);
    if (record === undefined) return undefined;
    let entry = held.get(id);
    if (entry === undefined) {
      if (held.size >= options.maxSessions) throw tooMany(options.maxSessions);
      const session = new LegacySession(id);
      session.handshake = {
        protocolVersion: record.protocolVersion,
        clientInfo: record.clientInfo as { name: string; version: string },
        capabilities: record.clientCapabilities as Record<string, unknown>,
      };
      // Created elsewhere: its initialized notification went to the replica that created it.
      session.ready = true;
      session.logLevel = (record.logLevel ?? undefined) as LogLevel | undefined;
      entry = {
        session,
        inFlight: new Map(),
        lastSeen: 0,
        stream: undefined,
        streamPrincipal: undefined,
      };
      held.set(id, entry);
    }
    entry.lastSeen = Date.now();
    return entry;
  }

  async function initialize(
    message: InboundMessage,
    principal: Principal,
    response: http.ServerResponse,
  ): Promise<void> {
    if (held.size >= options.maxSessions) {
      sendOutcome(
        response,
        options.adapter.fail(tooMany(options.maxSessions), message.id),
      );
      return;
    }
    // ≥ 128 bits from the CSPRNG, visible ASCII (base64url).
    const id = randomBytes(32).toString('base64url');
    const session = new LegacySession(id);
    const outcome = await options.adapter.handle(message, session, {
      principal,
      signal: new AbortController().signal,
    });
    const handshake = session.handshake;
    if (handshake === undefined) {
      sendOutcome(response, outcome);
      return;
    }
    const opened = await options.records.open(id, principal, {
      protocolVersion: handshake.protocolVersion,
      clientInfo: handshake.clientInfo,
      clientCapabilities: handshake.capabilities,
    });
    if (!opened) {
      refuse(
        response,
        'TOO_MANY_SESSIONS',
        'Too many open sessions for this role; end one (DELETE) or wait for one to expire.',
        message.id,
      );
      return;
    }
    held.set(id, {
      session,
      inFlight: new Map(),
      lastSeen: Date.now(),
      stream: undefined,
      streamPrincipal: undefined,
    });
    response.setHeader('Mcp-Session-Id', id);
    sendOutcome(response, outcome);
  }

  async function inSession(
    entry: Held,
    message: InboundMessage,
    principal: Principal,
    response: http.ServerResponse,
  ): Promise<void> {
    if (message.id === undefined) {
      if (message.method === 'notifications/cancelled') {
        // A legacy client cancels explicitly; unknown or finished ids are ignored (§8.4).
        const parsed = CancelledParamsSchema.safeParse(message.params ?? {});
        if (parsed.success)
          entry.inFlight.get(keyOf(parsed.data.requestId))?.abort();
      } else
        await options.adapter.handle(message, entry.session, {
          principal,
          signal: new AbortController().signal,
        });
      response.writeHead(202).end();
      return;
    }
    const key = keyOf(message.id);
    const controller = new AbortController();
    entry.inFlight.set(key, controller);
    try {
      const outcome = await options.adapter.handle(message, entry.session, {
        principal,
        signal: controller.signal,
      });
      // A cancelled request gets no response (§8.4).
      if (controller.signal.aborted) response.writeHead(202).end();
      else sendOutcome(response, outcome);
    } finally {
      if (entry.inFlight.get(key) === controller) entry.inFlight.delete(key);
    }
  }

  async function post(
    message: InboundMessage,
    principal: Principal,
    request: http.IncomingMessage,
    response: http.ServerResponse,
  ): Promise<void> {
    const id = header(request, 'mcp-session-id');
    if (id === undefined) {
      if (message.method === 'initialize' && message.id !== undefined)
        await initialize(message, principal, response);
      else
        refuse(
          response,
          'SESSION_REQUIRED',
          'Bad request: send Mcp-Session-Id, or initialize to start a session.',
        );
      return;
    }
    const version = header(request, 'mcp-protocol-version');
    if (version !== undefined && !LEGACY_VERSIONS.includes(version)) {
      refuse(
        response,
        'UNSUPPORTED_LEGACY_VERSION',
        `Unsupported MCP-Protocol-Version ${version.slice(0, 40)}; supported: ${LEGACY_VERSIONS.join(', ')}.`,
      );
      return;
    }
    const entry = await resume(id, principal);
    if (entry === undefined) {
      refuse(
        response,
        'SESSION_NOT_FOUND',
        'Session not found: it ended or expired; initialize a new one.',
      );
      return;
    }
    await inSession(entry, message, principal, response);
  }

  function openStream(
    entry: Held,
    principal: Principal,
    response: http.ServerResponse,
  ): void {
    const { session } = entry;
    session.channel = sseSink(response);
    entry.stream = response;
    entry.streamPrincipal = principal;
    try {
      options.subscriptions.attach(session, principal);
    } catch (error) {
      session.channel = undefined;
      entry.stream = undefined;
      sendOutcome(response, options.adapter.fail(error));
      return;
    }
    response.writeHead(200, [
      'Content-Type',
      'text/event-stream',
      'Cache-Control',
      'no-store',
      'X-Accel-Buffering',
      'no',
      'Connection',
      'close',
    ]);
    response.flushHeaders();
    const keepAlive = setInterval(() => {
      if (response.writableLength === 0) response.write(':\n\n');
    }, options.keepAliveMs);
    keepAlive.unref();
    response.on('close', () => {
      clearInterval(keepAlive);
      if (entry.stream !== response) return;
      entry.stream = undefined;
      entry.streamPrincipal = undefined;
      session.channel = undefined;
      options.subscriptions.detach(session);
    });
  }

  async function other(
    principal: Principal,
    request: http.IncomingMessage,
    response: http.ServerResponse,
  ): Promise<void> {
    request.resume();
    const id = header(request, 'mcp-session-id');
    if (id === undefined) {
      refuse(
        response,
        'SESSION_REQUIRED',
        'Bad request: GET and DELETE need the Mcp-Session-Id of a session.',
      );
      return;
    }
    if (request.method === 'DELETE') {
      if (!(await options.records.close(id, principal))) {
        refuse(
          response,
          'SESSION_NOT_FOUND',
          'Session not found: it ended or expired.',
        );
        return;
      }
      const entry = held.get(id);
      if (entry !== undefined) drop(id, entry);
      response.writeHead(204).end();
      return;
    }
    const entry = await resume(id, principal);
    if (entry === undefined)
      refuse(
        response,
        'SESSION_NOT_FOUND',
        'Session not found: it ended or expired; initialize a new one.',
      );
    else if (entry.stream !== undefined)
      refuse(
        response,
        'SESSION_STREAM_OPEN',
        'Conflict: this session already has a GET stream open.',
      );
    else openStream(entry, principal, response);
  }

  function drop(id: string, entry: Held): void {
    held.delete(id);
    options.subscriptions.detach(entry.session);
    for (const controller of entry.inFlight.values()) controller.abort();
    entry.session.close();
  }

  // Idle sessions leave this process; an open GET stream keeps its session alive in the store.
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [id, entry] of held) {
        const principal = entry.streamPrincipal;
        if (entry.stream !== undefined && principal !== undefined) {
          entry.lastSeen = now;
          options.records.touch(id, principal).then(
            (record) => {
              if (record === undefined) drop(id, entry);
            },
            (error: unknown) =>
              options.log(`legacy session renewal failed: ${String(error)}`),
          );
        } else if (
          now - entry.lastSeen >= options.idleMs &&
          entry.inFlight.size === 0
        )
          drop(id, entry);
      }
    },
    Math.max(1000, Math.floor(options.idleMs / 3)),
  );
  sweep.unref();

  return {
    claims(message, request) {
      if (hasModernClaim(message)) return false;
      const version = header(request, 'mcp-protocol-version');
      if (version !== undefined && isModernVersion(version)) return false;
      return (
        message.method === 'initialize' ||
        header(request, 'mcp-session-id') !== undefined
      );
    },
    post,
    other,
    close() {
      clearInterval(sweep);
      for (const [id, entry] of held) drop(id, entry);
    },
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
  const bytes = serializeMessageBytes(outcome.response);
  response.writeHead(outcome.httpStatus, [
    'Content-Type',
    'application/json',
    'Content-Length',
    String(bytes.length),
    'Cache-Control',
    'no-store',
  ]);
  response.end(bytes);
}
