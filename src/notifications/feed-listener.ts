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

type Subscriber = ReturnType<typeof createSubscriber>;

/** What a subscriber's events change and call. */
interface Hooks {
  readonly options: ListenerOptions;
  readonly poll: () => Promise<void>;
  readonly notified: (payload: unknown) => void;
  readonly state: { listening: boolean; lost: boolean };
}

/**
 * LISTEN on a dedicated connection (pg-listen), reconnecting forever; every reconnect and
 * listener error reads the log, so a lost notification loses nothing. `notified` hears the change
 * log's notifications; the other channels' go to their handlers, and each is told of every
 * (re)connect, and of every LISTEN it asked for (`ListenChannel.watch`). When the database's
 * primary moves (db's PrimaryTarget), the connection moves with it.
 */
export async function startListener(
  options: ListenerOptions,
  poll: () => Promise<void>,
  notified: (payload: unknown) => void,
): Promise<FeedListener> {
  const channels = options.channels ?? [];
  const hooks: Hooks = {
    options,
    poll,
    notified,
    state: { listening: false, lost: false },
  };
  let subscriber = openSubscriber(hooks);
  try {
    await connectSubscriber(subscriber, [
      CHANGES_CHANNEL,
      ...channels
        .filter((other) => other.watch === undefined)
        .map((other) => other.channel),
    ]);
  } catch (error) {
    // pg-listen's connection check runs from before its first connect: left alone, it would
    // reconnect for ever, and keep alive a process whose start failed.
    await retire(subscriber, options);
    throw error;
  }
  listened(hooks);
  const switching = switchOf(() => subscriber, options.warn);
  for (const other of channels)
    other.watch?.((on) => switching.turn(other, on));
  // pg-listen keeps the settings it was made with for every reconnect: a moved primary needs a new
  // subscriber, made with the settings of the primary now.
  const unfollow = options.db.primary?.onMove(() => {
    void switching.serially(async () => {
      subscriber = await followPrimary(subscriber, hooks, switching.closed);
    });
  });
  return {
    get listening() {
      return hooks.state.listening;
    },
    hearChanges: (on) =>
      switching.turn({ channel: CHANGES_CHANNEL, listening: () => {} }, on),
    close: async () => {
      unfollow?.();
      // A move under way may still put a new subscriber in place: the one to close is the one
      // there once it is done, retired so that a reconnect loop under way ends too.
      await switching.close();
      await retire(subscriber, options);
    },
  };
}

/** A subscriber on the primary as it is now, its events wired to `hooks`. */
function openSubscriber(hooks: Hooks): Subscriber {
  const { options, poll, state } = hooks;
  const { warn } = options;
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
    state.lost = true;
    if (state.listening || attempt === 1) {
      METRICS.listenerReconnects.inc();
      warn('live updates: listener connection lost; reconnecting');
    }
    state.listening = false;
  });
  // pg-listen's connect() says 'connected' before its caller's LISTENs are sent, so that first one
  // is left to connectSubscriber's caller (listened, once they are); a reconnect's comes after
  // pg-listen has LISTENed again.
  let opened = false;
  subscriber.events.on('connected', () => {
    if (opened) listened(hooks);
    opened = true;
  });
  subscriber.notifications.on(CHANGES_CHANNEL, hooks.notified);
  for (const other of options.channels ?? [])
    subscriber.notifications.on(other.channel, (payload: unknown) =>
      other.notified(payload),
    );
  return subscriber;
}

/** The connection LISTENs: catch up on whatever committed while it did not, and tell the channels. */
function listened({ options, poll, state }: Hooks): void {
  if (state.lost) options.log('live updates: listener reconnected');
  state.lost = false;
  state.listening = true;
  void poll();
  for (const other of options.channels ?? []) other.listening();
}

async function connectSubscriber(
  subscriber: Subscriber,
  channelNames: readonly string[],
): Promise<void> {
  // eslint-disable-next-line no-restricted-syntax -- pg-listen's own connection: LISTEN belongs to notifications/ (STYLE §1, §2)
  await subscriber.connect();
  for (const channel of channelNames) await subscriber.listenTo(channel);
}

/**
 * Leave `old` for a subscriber on the new primary, LISTENing to what `old` did; tried again every
 * second until it connects or the listener closes (then `old` is returned, closed).
 */
async function followPrimary(
  old: Subscriber,
  hooks: Hooks,
  closed: () => boolean,
): Promise<Subscriber> {
  const channelNames = old.getSubscribedChannels();
  void retire(old, hooks.options);
  hooks.state.listening = false;
  hooks.state.lost = true;
  hooks.options.warn(
    'live updates: the primary moved; listening on the new one',
  );
  while (!closed()) {
    const next = openSubscriber(hooks);
    try {
      await connectSubscriber(next, channelNames);
      // Closed while it connected: close() closed the subscriber it found, not this one.
      if (closed()) {
        void retire(next, hooks.options);
        return old;
      }
      listened(hooks);
      return next;
    } catch (error) {
      void retire(next, hooks.options);
      hooks.options.warn(
        `live updates: listening on the new primary failed (${describe(error)}); retrying`,
      );
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
  return old;
}

/**
 * Close a subscriber that is no longer used, and end a reconnect loop it runs: an attempt already
 * under way may still connect, and that connection is closed as soon as it is made; nothing it
 * hears reaches pgmcp.
 */
function retire(
  subscriber: Subscriber,
  options: ListenerOptions,
): Promise<void> {
  for (const event of ['error', 'reconnect', 'connected'] as const)
    subscriber.events.removeAllListeners(event);
  for (const channel of [
    CHANGES_CHANNEL,
    ...(options.channels ?? []).map((other) => other.channel),
  ])
    subscriber.notifications.removeAllListeners(channel);
  subscriber.events.on('error', () => undefined);
  // pg-listen's reconnect loop (retryTimeout Infinity) does not look at close(): it would try the
  // lost server for ever, its timers keeping the process alive. It says 'reconnect' outside its
  // try before each attempt, so a throw here rejects the loop, which ends it; pg-listen then says
  // 'error', heard just above.
  subscriber.events.on('reconnect', () => {
    throw new Error('this listener connection is retired');
  });
  subscriber.events.on('connected', () => {
    subscriber.close().catch(() => undefined);
  });
  return subscriber.close().catch(() => undefined);
}

/**
 * Turns channels on and off one at a time, so two quick turns cannot LISTEN twice, nor one turn
 * race a move to a new primary (`serially`); and closes the connection, after which nothing turns
 * (sessions dropped at shutdown turn their channel off).
 */
function switchOf(
  subscriber: () => Subscriber,
  warn: (line: string) => void,
): {
  readonly turn: (
    channel: Pick<ListenChannel, 'channel' | 'listening'>,
    on: boolean,
  ) => Promise<void>;
  readonly serially: (work: () => Promise<void>) => Promise<void>;
  readonly closed: () => boolean;
  readonly close: () => Promise<void>;
} {
  let switching = Promise.resolve();
  let closed = false;
  const serially = (work: () => Promise<void>) => {
    const done = switching.then(() => (closed ? undefined : work()));
    switching = done.catch(() => undefined);
    return done;
  };
  return {
    turn: (channel, on) =>
      serially(() => hear(subscriber(), channel, on)).catch(
        (error: unknown) => {
          // A lost connection: pg-listen LISTENs again to what it listened to, and a channel it
          // missed is read again at its next sweep.
          warn(
            `live updates: LISTEN ${channel.channel} failed (${describe(error)})`,
          );
        },
      ),
    serially,
    closed: () => closed,
    close: async () => {
      closed = true;
      await switching;
    },
  };
}

/**
 * LISTEN to `channel` or stop (pg-listen LISTENs again after a reconnect to what it listens to);
 * a channel newly heard is told, since what was sent on it before was not.
 */
async function hear(
  subscriber: Subscriber,
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
