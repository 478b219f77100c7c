// The fan-out's own rules, with an in-memory sink standing in for a client connection: one access
// check per role per batch, coalescing while a client is slow, stalled clients ended, broadcasts
// written in slices. (Delivery through Postgres, HTTP and stdio is covered in live.test.ts.)
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Principal } from '../../src/auth/index.js';
import { ProtocolError } from '../../src/errors.js';
import type { PublishedChange } from '../../src/notifications/index.js';
import {
  deliverChanges,
  StreamRegistry,
  subscriptionKeys,
  type Authorize,
  type Visibility,
} from '../../src/notifications/index.js';
import { StreamQueue } from '../../src/notifications/stream-queue.js';
import {
  SubscriptionMessages,
  type StreamSink,
} from '../../src/protocol/index.js';
import { LegacySession, LegacySubscriptions } from '../../src/legacy/index.js';
import { SERVER_INFO } from '../../src/version.js';
import { match } from '../setup/matchers.js';

class MemorySink implements StreamSink {
  readonly written: string[] = [];
  blocked = false;
  pendingBytes = 0;
  ended: string | undefined | null = null;
  #drain: (() => void) | undefined;
  #onEnd: (() => void) | undefined;
  /** Settles when the fan-out ends this stream. */
  readonly whenEnded = new Promise<void>((resolve) => {
    this.#onEnd = resolve;
  });

  write(message: string): boolean {
    this.written.push(message);
    return !this.blocked;
  }
  onDrain(listener: () => void): void {
    this.#drain = listener;
  }
  drain(): void {
    this.blocked = false;
    const listener = this.#drain;
    this.#drain = undefined;
    listener?.();
  }
  end(finalMessage?: string): void {
    this.ended = finalMessage;
    this.#onEnd?.();
  }
  /** How many list_changed notifications were written. */
  listChanges(): number {
    return this.written.filter((line) => line.includes('list_changed')).length;
  }
  updates(): string[] {
    return this.written
      .map(
        (line) =>
          JSON.parse(line) as { method: string; params: { uri?: string } },
      )
      .filter((message) => message.method === 'notifications/resources/updated')
      .map((message) => message.params.uri as string);
  }
}

/** Wait until the fan-out ends `sink`'s stream; fails the test if that takes over 5 s. */
async function untilEnded(sink: MemorySink): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error('the fan-out did not end the stream in 5 s')),
      5000,
    );
  });
  try {
    await Promise.race([sink.whenEnded, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const fanouts: StreamRegistry[] = [];
afterEach(() => {
  for (const fanout of fanouts.splice(0)) fanout.closeAll();
});

function setup(
  options: Partial<{
    stallTimeoutMs: number;
    maxPendingBytes: number;
    sliceMs: number;
    listChangedIntervalMs: number;
  }> = {},
) {
  const checks: string[] = [];
  // Everyone may hear of everything; the count of checks is what these tests watch.
  const authorize: Authorize = (principal, seqs) => {
    checks.push(principal.role ?? 'login');
    const visibility: Visibility = new Map(
      seqs.map((seq) => [seq, { before: true, after: true }]),
    );
    return Promise.resolve(visibility);
  };
  const fanout = new StreamRegistry({
    serverInfo: SERVER_INFO,
    maxStreams: 100_000,
    maxStreamsPerRole: 100_000,
    maxPendingBytes: options.maxPendingBytes ?? 1024 * 1024,
    stallTimeoutMs: options.stallTimeoutMs ?? 30_000,
    sliceMs: options.sliceMs,
    listChangedIntervalMs: options.listChangedIntervalMs,
    log: () => undefined,
  });
  fanouts.push(fanout);
  let nextId = 1;
  const open = (
    role: string,
    uris: string[],
    listChanged = false,
  ): MemorySink => {
    const sink = new MemorySink();
    const principal: Principal = { role, claims: {} };
    const release = fanout.reserve(principal);
    fanout.add(
      new StreamQueue({
        principal,
        messages: new SubscriptionMessages(nextId++),
        uris,
        listChanged,
        sink,
      }),
      release,
    );
    return sink;
  };
  const publish = (changes: readonly PublishedChange[]) =>
    deliverChanges(fanout, changes, authorize);
  return { fanout, checks, open, publish };
}

let seq = 0;
function change(
  uri: string,
  kind: PublishedChange['kind'] = 'updated',
): PublishedChange {
  seq += 1;
  return { seq: String(seq), uri, kind };
}

describe('the fan-out', () => {
  it('checks access once per distinct role per batch, however many streams', async () => {
    const { checks, open, publish } = setup();
    const sinks = [];
    for (let i = 0; i < 300; i += 1)
      sinks.push(
        open(
          ['support', 'engineering', 'finance'][i % 3] as string,
          ['notes:///a/1'],
          true,
        ),
      );
    await publish([change('notes:///a/1'), change('notes:///a/2', 'created')]);
    expect(checks.sort()).toEqual(['engineering', 'finance', 'support']);
    for (const sink of sinks) {
      expect(sink.updates()).toEqual(['notes:///a/1']);
      expect(
        sink.written.filter((line) => line.includes('list_changed')),
      ).toHaveLength(1);
    }
  });

  it('asks nothing and writes nothing when no stream cares', async () => {
    const { checks, open, publish } = setup();
    const sink = open('support', ['notes:///a/1']);
    await publish([change('notes:///b/1')]);
    expect(checks).toEqual([]);
    expect(sink.written).toEqual([]);
  });

  it('coalesces repeated updates of one URI while the client is not reading', async () => {
    const { open, publish } = setup();
    const sink = open('support', ['notes:///a/1', 'notes:///a/2']);
    sink.blocked = true;
    await publish([change('notes:///a/1')]); // written; the sink pushes back
    for (let i = 0; i < 50; i += 1)
      await publish([change('notes:///a/1'), change('notes:///a/2')]);
    expect(sink.updates()).toEqual(['notes:///a/1']);
    sink.drain();
    expect(sink.updates()).toEqual([
      'notes:///a/1',
      'notes:///a/1',
      'notes:///a/2',
    ]);
  });

  it('writes list_changed at once, then folds the ones due within the interval into one written when it has passed', async () => {
    vi.useFakeTimers();
    try {
      const { open, publish } = setup({ listChangedIntervalMs: 1000 });
      const sink = open('support', ['notes:///a/1'], true);
      await publish([change('notes:///a/2', 'created')]);
      expect(sink.listChanges()).toBe(1);
      for (let i = 3; i < 8; i += 1)
        await publish([change(`notes:///a/${i}`, 'created')]);
      // Updates are never held back by the pacing.
      await publish([change('notes:///a/1')]);
      expect(sink.updates()).toEqual(['notes:///a/1']);
      expect(sink.listChanges()).toBe(1);
      vi.advanceTimersByTime(999);
      expect(sink.listChanges()).toBe(1);
      vi.advanceTimersByTime(1);
      expect(sink.listChanges()).toBe(2);
      // Nothing changed since: nothing more is written.
      vi.advanceTimersByTime(5000);
      expect(sink.listChanges()).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('keeps a paced list_changed, and the pacing, when a 2025-11-25 session subscribes to more meanwhile', async () => {
    vi.useFakeTimers();
    try {
      const { fanout, publish } = setup({ listChangedIntervalMs: 1000 });
      const legacy = new LegacySubscriptions({
        streams: fanout,
        readable: (uris) => Promise.resolve([...uris]),
        maxUris: 100,
      });
      const sink = new MemorySink();
      const session = new LegacySession('s1');
      session.channel = sink;
      session.ready = true;
      const principal: Principal = { role: 'support', claims: {} };
      const signal = new AbortController().signal;
      await legacy.subscribe(session, 'notes:///a/1', { principal, signal });
      await publish([change('notes:///a/2', 'created')]);
      expect(sink.listChanges()).toBe(1);
      await publish([change('notes:///a/3', 'created')]);
      // Re-registers the session with one more URI while a list_changed waits for its interval.
      await legacy.subscribe(session, 'notes:///a/4', { principal, signal });
      await publish([change('notes:///a/5', 'created')]);
      expect(sink.listChanges()).toBe(1);
      vi.advanceTimersByTime(1000);
      expect(sink.listChanges()).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it("ends a 2025-11-25 session's GET stream, releasing its place, when the fan-out refuses it on re-registration", async () => {
    const fanout = new StreamRegistry({
      serverInfo: SERVER_INFO,
      maxStreams: 100,
      maxStreamsPerRole: 1,
      maxPendingBytes: 1024 * 1024,
      stallTimeoutMs: 30_000,
      log: () => undefined,
    });
    fanouts.push(fanout);
    // The shared store's side, in memory: every subscribe is stored.
    const legacy = new LegacySubscriptions({
      streams: fanout,
      readable: (uris) => Promise.resolve([...uris]),
      maxUris: 100,
      records: {
        subscribe: () => Promise.resolve('subscribed' as const),
        unsubscribe: () => Promise.resolve(true),
      },
    });
    const sink = new MemorySink();
    const session = new LegacySession('s1');
    session.channel = sink;
    session.ready = true;
    session.logLevel = 'info';
    const signal = new AbortController().signal;
    const support: Principal = { role: 'support', claims: {} };
    legacy.attach(session, support);
    expect(fanout.size).toBe(1);
    // Another stream holds finance's one place; the session re-registers as finance.
    const other = fanout.reserve({ role: 'finance', claims: {} });
    await legacy.subscribe(session, 'notes:///a/1', {
      principal: { role: 'finance', claims: {} },
      signal,
    });
    expect(sink.ended).not.toBeNull();
    expect(session.channel).toBeUndefined();
    expect(
      sink.written.some((line) =>
        /"level":"error".*notifications stopped: Too many open subscriptions for this role/.test(
          line,
        ),
      ),
    ).toBe(true);
    // Nothing of it is left in the fan-out: support's place is free again.
    expect(fanout.size).toBe(0);
    other();
    const release = fanout.reserve(support);
    release();
  });

  it('keeps streams open and fails the batch (to be retried) when the pool is too busy to check access', async () => {
    const { fanout, open } = setup();
    const sink = open('support', ['notes:///a/1'], true);
    const busy = () =>
      Promise.reject(
        new ProtocolError('POOL_EXHAUSTED', 'The server is busy.'),
      );
    await expect(
      deliverChanges(fanout, [change('notes:///a/1')], busy),
    ).rejects.toMatchObject({ key: 'POOL_EXHAUSTED' });
    expect(sink.ended).toBeNull();
    expect(sink.written).toEqual([]);
    expect(fanout.size).toBe(1);
  });

  it('tells every stream its subscribed URIs and list may be stale', () => {
    const { fanout, checks, open } = setup();
    const watching = open('support', ['notes:///a/1', 'file:///docs/'], true);
    const quiet = open('finance', ['notes:///b/1']);
    fanout.markAllStale();
    expect(watching.updates()).toEqual(['notes:///a/1', 'file:///docs/']);
    expect(
      watching.written.filter((line) => line.includes('list_changed')),
    ).toHaveLength(1);
    expect(quiet.updates()).toEqual(['notes:///b/1']);
    expect(quiet.written.some((line) => line.includes('list_changed'))).toBe(
      false,
    );
    // Only what the streams subscribed to: nothing is asked of the database.
    expect(checks).toEqual([]);
  });

  it('ends a stream whose client stays blocked past the stall timeout, with a clear reason', async () => {
    const { fanout, open, publish } = setup({ stallTimeoutMs: 100 });
    const sink = open('support', ['notes:///a/1']);
    sink.blocked = true;
    await publish([change('notes:///a/1')]);
    expect(fanout.size).toBe(1);
    await untilEnded(sink);
    expect(fanout.size).toBe(0);
    const ended = JSON.parse(sink.ended as string) as {
      error: { message: string };
    };
    expect(ended).toMatchObject({
      id: 1,
      error: {
        code: -32603,
        message: match.stringMatching(/did not read its notifications/),
        data: { code: 'STREAM_STALLED' },
      },
    });
    expect(ended.error.message).toMatch(/did not read its notifications/);
  });

  it('ends a blocked stream at once when its unread bytes pass the limit', async () => {
    const { fanout, open, publish } = setup({ maxPendingBytes: 4096 });
    const sink = open('support', ['notes:///a/1']);
    sink.blocked = true;
    sink.pendingBytes = 10_000;
    await publish([change('notes:///a/1')]);
    // Ended by the publish itself, not later by the stall timer.
    expect(fanout.size).toBe(0);
    expect(JSON.parse(sink.ended as string)).toMatchObject({
      error: { data: { code: 'STREAM_STALLED' } },
    });
  });

  it('ends a blocked stream whose queue of distinct URIs passes its bound', async () => {
    const { fanout, open, publish } = setup();
    const sink = open('support', ['file:///big/']);
    sink.blocked = true;
    await publish([change('file:///big/first')]);
    const many = Array.from({ length: 10_001 }, (_, index) =>
      change(`file:///big/${index}`),
    );
    await publish(many);
    expect(fanout.size).toBe(0);
    expect(JSON.parse(sink.ended as string)).toMatchObject({
      error: { data: { code: 'STREAM_STALLED' } },
    });
  });

  it('yields to the event loop between slices of a large broadcast', async () => {
    // Slices are by time (2 ms by default); with no time allowed, every 16 streams yield.
    const { open, publish } = setup({ sliceMs: 0 });
    for (let i = 0; i < 2000; i += 1) open('support', [], true);
    let ranDuring = false;
    const publishing = publish([change('notes:///a/1', 'created')]);
    setImmediate(() => {
      ranDuring = true;
    });
    let finished = false;
    void publishing.then(() => {
      finished = true;
    });
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(ranDuring).toBe(true);
    expect(finished).toBe(false);
    await publishing;
  });

  it('ends a stream when the token it was opened with expires', async () => {
    const { fanout } = setup();
    const sink = new MemorySink();
    const principal: Principal = {
      role: 'support',
      claims: { exp: Date.now() / 1000 + 0.2 },
    };
    fanout.add(
      new StreamQueue({
        principal,
        messages: new SubscriptionMessages('t'),
        uris: [],
        listChanged: true,
        sink,
      }),
      fanout.reserve(principal),
    );
    expect(fanout.size).toBe(1);
    await untilEnded(sink);
    expect(fanout.size).toBe(0);
    const ended = JSON.parse(sink.ended as string) as {
      error: { message: string };
    };
    expect(ended).toMatchObject({
      id: 't',
      error: {
        message: match.stringMatching(/token expired/),
        data: { code: 'AUTHENTICATION_REQUIRED' },
      },
    });
    expect(ended.error.message).toMatch(/token expired/);
  });

  it('gives every open stream its graceful result on closeAll', () => {
    const { fanout, open } = setup();
    const sink = open('support', [], true);
    fanout.closeAll();
    expect(JSON.parse(sink.ended as string)).toMatchObject({
      id: 1,
      result: { resultType: 'complete' },
    });
    expect(() => fanout.reserve({ role: 'support', claims: {} })).toThrow(
      /shutting down/,
    );
  });
});

describe('subscriptionKeys', () => {
  it('matches a URI and each directory above it, never the scheme or authority alone', () => {
    expect(subscriptionKeys('file:///docs/guides/a.md')).toEqual([
      'file:///docs/guides/a.md',
      'file:///docs/guides/',
      'file:///docs/',
      'file:///',
    ]);
    expect(subscriptionKeys('notes:///tag/slug')).toEqual([
      'notes:///tag/slug',
      'notes:///tag/',
      'notes:///',
    ]);
    expect(subscriptionKeys('https://example.com/a/b')).toEqual([
      'https://example.com/a/b',
      'https://example.com/a/',
      'https://example.com/',
    ]);
    expect(subscriptionKeys('test://static-text')).toEqual([
      'test://static-text',
    ]);
    expect(subscriptionKeys('urn:isbn:123')).toEqual(['urn:isbn:123']);
  });
});
