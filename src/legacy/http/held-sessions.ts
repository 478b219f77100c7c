// The 2025-11-25 HTTP sessions this process holds (legacy digest §5.5–§5.8): their state, the
// requests being answered, the GET stream if it is open here; idle ones leave, and an open GET
// stream keeps its session alive in the shared store.
import type http from 'node:http';
import type { Principal } from '../../auth/index.js';
import { ProtocolError } from '../../errors.js';
import type {
  DispatchOutcome,
  LogLevel,
  StreamSink,
} from '../../protocol/index.js';
import { SSE_HEADERS } from '../../transport/index.js';
import { LegacySession } from '../session/legacy-session.js';
import { sendOutcome } from './legacy-http-answers.js';
import type { LegacySessionRecords } from './session-records.js';
import type { Flight } from './session-flight.js';

/** What the held sessions need: the store, the fan-out, limits, and the era's error form. */
export interface HeldSessionsOptions {
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
  /** An error outcome in the 2025-11-25 form (the adapter's fail). */
  readonly fail: (error: unknown) => DispatchOutcome;
}

/** One session as this process holds it: state, requests in flight, the GET stream if here. */
export interface Held {
  readonly session: LegacySession;
  /** Requests being answered, by id: their cancel, and who sent them. */
  readonly inFlight: Map<string, Flight>;
  lastSeen: number;
  stream: http.ServerResponse | undefined;
  streamPrincipal: Principal | undefined;
}

export function held(session: LegacySession): Held {
  return {
    session,
    inFlight: new Map(),
    lastSeen: Date.now(),
    stream: undefined,
    streamPrincipal: undefined,
  };
}

export function tooMany(limit: number): ProtocolError {
  return new ProtocolError(
    'TOO_MANY_SESSIONS',
    `Too many open sessions on this server (limit ${limit}); end one (DELETE) or try another replica.`,
  );
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

/** The sessions held by this process, by id. */
export class HeldSessions {
  readonly #options: HeldSessionsOptions;
  readonly #held = new Map<string, Held>();
  readonly #sweep: NodeJS.Timeout;

  constructor(options: HeldSessionsOptions) {
    this.#options = options;
    this.#sweep = setInterval(
      () => this.#sweepIdle(),
      Math.max(1000, Math.floor(options.idleMs / 3)),
    );
    this.#sweep.unref();
  }

  get size(): number {
    return this.#held.size;
  }

  get(id: string): Held | undefined {
    return this.#held.get(id);
  }

  /** A session just initialized here. */
  add(id: string, session: LegacySession): void {
    this.#held.set(id, held(session));
  }

  /** Refuse a new session when this process holds its maximum. */
  checkRoom(): void {
    if (this.#held.size >= this.#options.maxSessions)
      throw tooMany(this.#options.maxSessions);
  }

  close(): void {
    clearInterval(this.#sweep);
    for (const [id, entry] of this.#held) this.drop(id, entry);
  }

  /** The live session `id` of `principal` (renewed), held here; undefined for anyone else's. */
  async resume(id: string, principal: Principal): Promise<Held | undefined> {
    const record = await this.#options.records.touch(id, principal);
    if (record === undefined) return undefined;
    let entry = this.#held.get(id);
    if (entry === undefined) {
      this.checkRoom();
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

  /** Make `response` the session's GET stream, or send the refusal (the fan-out's caps reached). */
  openStream(
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
      sendOutcome(response, this.#options.fail(error));
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

  /** The session leaves this process: its stream, requests in flight and waits end. */
  drop(id: string, entry: Held): void {
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
            if (record === undefined) this.drop(id, entry);
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
        this.drop(id, entry);
    }
  }
}
