// The change feed's LISTEN connection (pg-listen): pgmcp_changes, and the other channels handed in
// (listen-channel.ts), re-subscribed after every reconnect, each told when it may have missed some.
import createSubscriberModule from 'pg-listen';
import type { DatabaseHandle } from '../db/index.js';
import { METRICS } from '../observability/index.js';
import type { ListenChannel } from './listen-channel.js';

// pg-listen is CommonJS; under ESM its function is the default export's `default`.
const createSubscriber = createSubscriberModule.default;

/** The NOTIFY channel the capture triggers use (README "Live updates"). */
export const CHANGES_CHANNEL = 'pgmcp_changes';

/** What the listener needs of the feed's options. */
export interface ListenerOptions {
  readonly db: DatabaseHandle;
  readonly log: (line: string) => void;
  readonly warn: (line: string) => void;
  readonly channels?: readonly ListenChannel[];
}

/** The feed's listener: whether it is connected, and which channels it LISTENs on. */
export interface FeedListener {
  readonly listening: boolean;
  /**
   * LISTEN to the change log's channel, or stop: PostgreSQL wakes every listening session of a
   * database on every NOTIFY, whatever its channels, so a follower listens to nothing it need not.
   */
  hearChanges(on: boolean): Promise<void>;
  close(): Promise<void>;
}

/**
 * LISTEN on a dedicated connection (pg-listen), reconnecting forever; every reconnect and
 * listener error reads the log, so a lost notification loses nothing. `notified` hears the change
 * log's notifications; the other channels' go to their handlers, and each is told of every
 * (re)connect, and of every LISTEN it asked for (`ListenChannel.watch`).
 */
export async function startListener(
  options: ListenerOptions,
  poll: () => Promise<void>,
  notified: (payload: unknown) => void,
): Promise<FeedListener> {
  const { warn } = options;
  const channels = options.channels ?? [];
  let listening = false;
  let lost = false;
  const subscriber = createSubscriber(
    options.db.sessionConfig('pgmcp-listener'),
    {
      // Never give up reconnecting; notifications during the outage are lost, the log is not.
      retryTimeout: Infinity,
      retryInterval: (attempt) => Math.min(5000, 250 * 2 ** attempt),
      paranoidChecking: 10_000,
    },
  );
  subscriber.events.on('error', (error) => {
    // A payload that is not JSON, or a reconnect that failed: log, and read the log anyway.
    METRICS.changeFeedFailures.inc();
    warn(`live updates: listener error (${describe(error)})`);
    void poll();
  });
  subscriber.events.on('reconnect', (attempt) => {
    lost = true;
    if (listening || attempt === 1) {
      METRICS.listenerReconnects.inc();
      warn('live updates: listener connection lost; reconnecting');
    }
    listening = false;
  });
  subscriber.events.on('connected', () => {
    if (lost) options.log('live updates: listener reconnected');
    lost = false;
    listening = true;
    // Catch up on whatever committed while we were not listening.
    void poll();
    for (const other of channels) other.listening();
  });
  subscriber.notifications.on(CHANGES_CHANNEL, notified);
  for (const other of channels)
    subscriber.notifications.on(other.channel, (payload: unknown) =>
      other.notified(payload),
    );
  // eslint-disable-next-line no-restricted-syntax -- pg-listen's own connection: LISTEN belongs to notifications/ (STYLE §1, §2)
  await subscriber.connect();
  await subscriber.listenTo(CHANGES_CHANNEL);
  for (const other of channels)
    if (other.watch === undefined) await subscriber.listenTo(other.channel);
  listening = true;
  const { turn, close } = switchOf(subscriber, warn);
  for (const other of channels) other.watch?.((on) => turn(other, on));
  return {
    get listening() {
      return listening;
    },
    hearChanges: (on) =>
      turn({ channel: CHANGES_CHANNEL, listening: () => {} }, on),
    close,
  };
}

/**
 * Turns channels on and off one at a time, so two quick turns cannot LISTEN twice; and closes the
 * connection, after which nothing turns (sessions dropped at shutdown turn their channel off).
 */
function switchOf(
  subscriber: ReturnType<typeof createSubscriber>,
  warn: (line: string) => void,
): {
  readonly turn: (
    channel: Pick<ListenChannel, 'channel' | 'listening'>,
    on: boolean,
  ) => Promise<void>;
  readonly close: () => Promise<void>;
} {
  let switching = Promise.resolve();
  let closed = false;
  return {
    turn: (channel, on) =>
      (switching = switching
        .then(() => (closed ? undefined : hear(subscriber, channel, on)))
        .catch((error: unknown) => {
          // A lost connection: pg-listen LISTENs again to what it listened to, and a channel it
          // missed is read again at its next sweep.
          warn(
            `live updates: LISTEN ${channel.channel} failed (${describe(error)})`,
          );
        })),
    close: () => {
      closed = true;
      return subscriber.close().catch(() => undefined);
    },
  };
}

/**
 * LISTEN to `channel` or stop (pg-listen LISTENs again after a reconnect to what it listens to);
 * a channel newly heard is told, since what was sent on it before was not.
 */
async function hear(
  subscriber: ReturnType<typeof createSubscriber>,
  channel: Pick<ListenChannel, 'channel' | 'listening'>,
  on: boolean,
): Promise<void> {
  const heard = subscriber.getSubscribedChannels().includes(channel.channel);
  if (on && !heard) {
    await subscriber.listenTo(channel.channel);
    channel.listening();
  }
  if (!on && heard) await subscriber.unlisten(channel.channel);
}

/** An error for the log: its SQLSTATE, if any, and message. */
export function describe(error: unknown): string {
  const code =
    typeof error === 'object' && error !== null
      ? (error as { code?: unknown }).code
      : undefined;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === 'string' ? `${code}: ${message}` : message;
}
