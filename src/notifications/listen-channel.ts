// Another NOTIFY channel the change feed's listener connection LISTENs on beside pgmcp_changes, so
// a replica holds one LISTEN connection per database whatever listens.

/** A channel, what to do with its notifications, and what to do after a reconnect. */
export interface ListenChannel {
  /** Fixed, lower_snake, listed in README. */
  readonly channel: string;
  /** A notification's payload (parsed as JSON). Never throws. */
  readonly notified: (payload: unknown) => void;
  /**
   * The listener (re)connected and LISTENs again: what was sent on the channel meanwhile is lost,
   * so read again whatever it would have announced. Never throws.
   */
  readonly listening: () => void;
  /**
   * Absent: LISTEN always. Present: the channel is LISTENed only while wanted; the listener hands
   * it the switch once it has started, and calls `listening` each time the switch turns it on.
   */
  readonly watch?: (want: (on: boolean) => Promise<void>) => void;
}
