// The 2025-11-25 HTTP sessions this process holds (legacy digest §5.5–§5.8): their state, the
// requests being answered, the GET stream if it is open here; idle ones leave, and an open GET
// stream keeps its session alive in the shared store. Told that a session changed (through any
// replica: ended, subscribed, its stream claimed elsewhere), the holder reads it again and acts.
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
import type {
  LegacySessionRecords,
  LegacyStreamState,
} from './session-records.js';
import type { Flight } from './session-flight.js';

/** What the held sessions need: the store, the fan-out, limits, and the era's error form. */
export interface HeldSessionsOptions {
  readonly records: LegacySessionRecords;
  /** Registers a session's GET stream with the fan-out, and takes it off. */
  readonly subscriptions: {
    attach(session: LegacySession, principal: Principal): void;
    detach(session: LegacySession): void;
    /** The subscriptions the store holds for the session (legacy-subscriptions.ts). */
    load(session: LegacySession, stored: ReadonlyMap<string, string>): void;
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
  /** Who the session is bound to, as last seen here (reads of the store check the binding). */
  principal: Principal;
  /** Requests being answered, by id: their cancel, and who sent them. */
  readonly inFlight: Map<string, Flight>;
  lastSeen: number;
  stream: http.ServerResponse | undefined;
  streamPrincipal: Principal | undefined;
  /** The generation the stream held here claimed; a newer one elsewhere closes it. */
  generation: bigint | undefined;
  /** A read of the session under way, and whether to read once more after it. */
  refreshing: Promise<void> | undefined;
  refreshAgain: boolean;
  /** GET streams being claimed: a change told meanwhile is read again after the claim's read. */
  claiming: number;
}

export function held(session: LegacySession, principal: Principal): Held {
  return {
    session,
    principal,
    inFlight: new Map(),
    lastSeen: Date.now(),
    stream: undefined,
    streamPrincipal: undefined,
    generation: undefined,
    refreshing: undefined,
    refreshAgain: false,
    claiming: 0,
  };
}

/** A new GET stream: who opens it, and its answer. */
export interface StreamRequest {
  readonly principal: Principal;
  readonly response: http.ServerResponse;
}

function notFound(): ProtocolError {
  return new ProtocolError(
    'SESSION_NOT_FOUND',
    'Session not found: it ended or expired; initialize a new one.',
  );
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
  /** Session ids by the name the store's channel gives them (its eventKey). */
  readonly #byKey = new Map<string, string>();
  readonly #sweep: NodeJS.Timeout;
  /**
   * The sessions' channel's switch: on while this process holds a session, so a replica no
   * 2025-11-25 client uses is not woken by every NOTIFY in the database.
   */
  #want: ((on: boolean) => Promise<void>) | undefined;

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
  add(id: string, session: LegacySession, principal: Principal): void {
    this.#hold(id, held(session, principal));
  }

  #hold(id: string, entry: Held): void {
    this.#held.set(id, entry);
    this.#byKey.set(this.#options.records.eventKey(id), id);
    if (this.#held.size === 1) void this.#want?.(true);
  }

  /** The listener hands the channel's switch over once it has started. */
  watch(want: (on: boolean) => Promise<void>): void {
    this.#want = want;
    void want(this.#held.size > 0);
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
      entry = held(session, principal);
      this.#hold(id, entry);
    }
    entry.principal = principal;
    entry.lastSeen = Date.now();
    return entry;
  }

  /**
   * A GET stream for session `id` (issue 34 point 1): it claims the session's stream in the store,
   * so the newest stream wins on every replica; one held here is closed at once, one elsewhere
   * when its replica is told. The session's subscriptions and log level are read from the store.
   */
  async claimStream(
    id: string,
    entry: Held,
    { principal, response }: StreamRequest,
  ): Promise<void> {
    const { records } = this.#options;
    // A client gone while the store answers must not leave a stream that nothing will close.
    let gone = false;
    const onClose = (): void => {
      gone = true;
    };
    response.once('close', onClose);
    entry.claiming += 1;
    try {
      const generation = await records.claimStream(id, principal);
      // The state is read and applied in one of the session's turns (legacy-session.ts inTurn).
      await entry.session.inTurn(async () => {
        const state =
          generation === undefined
            ? undefined
            : await records.streamState(id, principal);
        response.off('close', onClose);
        if (gone) return;
        if (generation === undefined || state === undefined)
          sendOutcome(response, this.#options.fail(notFound()));
        else
          this.#claimed(id, entry, { principal, response, generation, state });
      });
    } catch (error) {
      response.off('close', onClose);
      sendOutcome(response, this.#options.fail(error));
    } finally {
      entry.claiming -= 1;
    }
  }

  /** The claim's answer: the stream opens, or the session is gone, or a newer GET won here. */
  #claimed(
    id: string,
    entry: Held,
    claim: StreamRequest & {
      readonly generation: bigint;
      readonly state: LegacyStreamState;
    },
  ): void {
    const { response, generation, state } = claim;
    if (this.#held.get(id) !== entry) {
      sendOutcome(response, this.#options.fail(notFound()));
      return;
    }
    if (entry.generation !== undefined && entry.generation > generation) {
      // A newer GET of this session was opened here meanwhile: this one lost already.
      response.writeHead(200, [...SSE_HEADERS]).end();
      return;
    }
    this.#endStream(entry);
    this.#apply(entry, state);
    this.#openStream(entry, claim);
  }

  /** Make `response` the session's GET stream, or send the refusal (the fan-out's caps reached). */
  #openStream(
    entry: Held,
    {
      principal,
      response,
      generation,
    }: StreamRequest & { readonly generation: bigint },
  ): void {
    const { session } = entry;
    session.channel = sseSink(response);
    entry.stream = response;
    entry.streamPrincipal = principal;
    entry.generation = generation;
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
      if (entry.stream === response) this.#endStream(entry);
    });
  }

  /** The stream held here (if any) is no longer the session's: it ends, delivery stops. */
  #endStream(entry: Held): void {
    const response = entry.stream;
    if (response === undefined) return;
    entry.stream = undefined;
    entry.streamPrincipal = undefined;
    entry.session.channel = undefined;
    this.#options.subscriptions.detach(entry.session);
    if (!response.writableEnded) response.end();
  }

  /**
   * The store's channel named a session (its payload): if it is held here with a stream or
   * requests in flight, read it again. Anyone may NOTIFY, so only what is read is acted on.
   */
  changed(payload: unknown): void {
    if (typeof payload !== 'string') return;
    const id = this.#byKey.get(payload);
    const entry = id === undefined ? undefined : this.#held.get(id);
    if (id === undefined || entry === undefined) return;
    if (
      entry.stream !== undefined ||
      entry.inFlight.size > 0 ||
      entry.claiming > 0
    )
      this.#refresh(id, entry);
  }

  /** The channel may have missed some (a reconnect): read every session with a stream here again. */
  resync(): void {
    for (const [id, entry] of this.#held)
      if (entry.stream !== undefined) this.#refresh(id, entry);
  }

  /** Read session `id` again, one read at a time per session, and act on what it says. */
  #refresh(id: string, entry: Held): void {
    if (entry.refreshing !== undefined) {
      entry.refreshAgain = true;
      return;
    }
    entry.refreshing = (async () => {
      do {
        entry.refreshAgain = false;
        try {
          await entry.session.inTurn(async () => {
            const state = await this.#options.records.streamState(
              id,
              entry.streamPrincipal ?? entry.principal,
            );
            if (this.#held.get(id) !== entry) return;
            if (state === undefined) this.drop(id, entry);
            else this.#apply(entry, state);
          });
        } catch (error) {
          this.#options.log(
            `legacy session: reading it again failed: ${error instanceof Error ? error.message : String(error)}`,
          );
          return;
        }
      } while (entry.refreshAgain);
    })().finally(() => {
      entry.refreshing = undefined;
    });
  }

  /** What the store says of a held session: its log level, its stream's claim, its URIs. */
  #apply(entry: Held, state: LegacyStreamState): void {
    entry.session.logLevel = (state.logLevel ?? undefined) as
      LogLevel | undefined;
    if (entry.generation !== undefined && state.generation > entry.generation)
      this.#endStream(entry);
    this.#options.subscriptions.load(entry.session, state.subscriptions);
  }

  /** The session leaves this process: its stream, requests in flight and waits end. */
  drop(id: string, entry: Held): void {
    if (this.#held.delete(id) && this.#held.size === 0)
      void this.#want?.(false);
    this.#byKey.delete(this.#options.records.eventKey(id));
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
            // Gone, or read again: a safety net under the channel's notifications.
            if (record === undefined) this.drop(id, entry);
            else this.#refresh(id, entry);
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
