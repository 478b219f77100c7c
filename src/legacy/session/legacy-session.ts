// What a 2025-11-25 ("legacy") client's session holds (legacy digest §0.3): negotiated version,
// client info and capabilities, log level, subscribed URIs and the channel notifications go out on.
// The same object serves a stdio process and an HTTP session; transports own the channel.
import { ServerRequests } from './server-requests.js';
import {
  LOG_LEVELS,
  type Implementation,
  type LogLevel,
  type StreamSink,
} from '../../protocol/index.js';

/** The legacy versions `initialize` accepts, newest first; the first is the fallback answer. */
export const LEGACY_VERSIONS: readonly string[] = [
  '2025-11-25',
  '2025-06-18',
  '2025-03-26',
];

/** What `initialize` settled; stored with the session so another replica can resume it. */
export interface LegacyHandshake {
  readonly protocolVersion: string;
  readonly clientInfo: Implementation;
  readonly capabilities: Record<string, unknown>;
}

/** One legacy session: a stdio process or an HTTP `Mcp-Session-Id`. */
export class LegacySession {
  handshake: LegacyHandshake | undefined;
  /** notifications/initialized arrived. */
  ready = false;
  /** No notifications/message until the client sets a level (legacy digest §8.2, §12.4). */
  logLevel: LogLevel | undefined;
  /**
   * Subscribed URIs, normalized. An HTTP session's are kept in the shared store and loaded by the
   * process holding its GET stream (issue 34 point 1); a stdio session's live here only.
   */
  readonly subscriptions = new Set<string>();
  /** Where server-to-client notifications go (stdio: stdout; HTTP: the open GET stream). */
  channel: StreamSink | undefined;
  /** Requests this server sent the client (elicitation, sampling) and awaits the answer to. */
  readonly requests = new ServerRequests();
  #closed = false;
  /** The end of the last change to or read of the session's shared state (see inTurn). */
  #turn: Promise<unknown> = Promise.resolve();

  constructor(readonly id?: string) {}

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Run `step` when the steps queued before it have ended. What this process holds of an HTTP
   * session's shared state (its log level and subscriptions) is changed here and then stored, or
   * read from the store and applied; each is one step, so a read that began before a change here
   * was stored is never applied after it (it would set the level or URIs back), and a change waits
   * for a read under way. A step that fails does not stop the ones after it.
   */
  inTurn<T>(step: () => Promise<T>): Promise<T> {
    const run = this.#turn.then(step);
    this.#turn = run.catch(() => undefined);
    return run;
  }

  /** The session ended (DELETE, expiry, EOF): no more notifications. */
  close(): void {
    this.#closed = true;
    this.subscriptions.clear();
    this.requests.closeAll();
    const channel = this.channel;
    this.channel = undefined;
    channel?.end();
  }

  /** Send notifications/message when `level` is at or above the session's level. */
  log(level: LogLevel, data: Record<string, unknown>): void {
    if (this.logLevel === undefined || this.channel === undefined) return;
    if (LOG_LEVELS.indexOf(level) < LOG_LEVELS.indexOf(this.logLevel)) return;
    this.channel.write(
      JSON.stringify({
        jsonrpc: '2.0',
        method: 'notifications/message',
        params: { level, logger: 'pgmcp', data },
      }),
    );
  }
}

/**
 * The fan-out's messages for a legacy session: the 2025-11-25 forms, with no subscriptionId; a
 * legacy session has no listen request to answer, so ending delivery sends nothing.
 */
export class LegacyNotificationMessages {
  static readonly LIST_CHANGED =
    '{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}';

  updated(uriJson: string): string {
    return `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":${uriJson}}}`;
  }

  listChanged(): string {
    return LegacyNotificationMessages.LIST_CHANGED;
  }

  promptsListChanged(): string {
    return '{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}';
  }

  result(): undefined {
    return undefined;
  }

  error(): undefined {
    return undefined;
  }
}
