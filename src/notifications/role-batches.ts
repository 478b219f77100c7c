// A batch of changes, by role: which streams could care, one access check per role among them,
// then each stream's share enqueued, in time slices so requests are not held up behind a broadcast.
import type { Principal } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import type { StreamQueue } from './stream-queue.js';
import type { StreamRegistry } from './stream-registry.js';

/**
 * A committed change as the streams hear of it: `uri` is what subscribers of it (or of a
 * directory above it) hear of; null when only lists may have changed. Several entries may share a
 * seq (a schema change touches a schema's and a table's URIs); authorization is per seq.
 */
export interface PublishedChange {
  readonly seq: string;
  readonly uri: string | null;
  readonly kind: 'created' | 'updated' | 'deleted' | 'schema';
  /** Whether it can change resources/list (default true; false for rows of unlisted tables). */
  readonly listed?: boolean;
  /**
   * A stored prompt changed (`uri` null): it can change prompts/list, never resources/list, and
   * is heard by the streams that asked for prompts' list changes.
   */
  readonly prompt?: boolean;
  /** Reading `uri` needs a person's consent (a row of a table marked sensitive in the config). */
  readonly sensitive?: boolean;
}

/**
 * What one role may hear of, per change seq: readable before it, readable after it, and whether
 * the changed stored resource is marked sensitive (heard of only after consent).
 */
export type Visibility = ReadonlyMap<
  string,
  { before: boolean; after: boolean; sensitive?: boolean }
>;

/**
 * Which of `seqs` `principal`'s role may hear of: one query in the role's own transaction, in the
 * database whose change log the seqs come from. Throws ProtocolError; UNAVAILABLE, TIMEOUT and
 * POOL_EXHAUSTED mean "try the batch again later".
 */
export type Authorize = (
  principal: Principal,
  seqs: readonly string[],
) => Promise<Visibility>;

/** Who may hear of one batch: what `whoMayHear` decided, for `enqueueHeard` to write. */
export interface Hearing {
  readonly changes: readonly PublishedChange[];
  /** The streams subscribed to a changed URI (or a directory above it), with those changes. */
  readonly interested: ReadonlyMap<StreamQueue, readonly PublishedChange[]>;
  /** Per role key: what the role may hear of. A role without an entry hears nothing. */
  readonly visibility: ReadonlyMap<string, Visibility>;
}

/**
 * Decide who may hear of `changes`: the streams that could care (subscribers of a changed URI,
 * and list subscribers), and one `authorize` per distinct role among them, each in that role's
 * transaction. If a check cannot run (the database is unavailable) this throws before anything
 * is written, so the batch can be retried whole; a role whose check is refused loses its streams.
 * Undefined when no stream could care.
 */
export async function whoMayHear(
  streams: StreamRegistry,
  changes: readonly PublishedChange[],
  authorize: Authorize,
): Promise<Hearing | undefined> {
  if (changes.length === 0 || streams.size === 0) return undefined;
  const interested = streams.subscribersOf(changes);
  const principals = new Map<string, Principal>();
  for (const stream of [...streams.listStreams, ...interested.keys()])
    principals.set(stream.roleKey, stream.principal);
  if (principals.size === 0) return undefined;
  const seqs = [...new Set(changes.map((change) => change.seq))];
  const visibility = new Map<string, Visibility>();
  const refused = new Map<string, ProtocolError>();
  await Promise.all(
    [...principals].map(async ([key, principal]) => {
      try {
        visibility.set(key, await authorize(principal, seqs));
      } catch (error) {
        // Anything else is transient: the whole batch is read and published again later.
        if (!isRefusal(error)) throw error;
        refused.set(key, error);
      }
    }),
  );
  // A role whose check is refused (dropped, no longer granted) loses its streams.
  for (const [key, error] of refused) {
    streams.limits.log(
      `ending listen streams of a role whose access check failed (${error.key})`,
    );
    streams.endRole(
      key,
      'Subscription ended: the role can no longer be checked for access.',
      'ROLE_FORBIDDEN',
    );
  }
  return { changes, interested, visibility };
}

/**
 * Ask each of `principals` which of `seqs` it may hear of, into `decided`. A refused check leaves
 * the role out (a replica with its streams asks itself, and ends them); any other failure throws,
 * so the batch is read again.
 */
export async function decideEach(
  principals: ReadonlyMap<string, Principal>,
  {
    seqs,
    authorize,
    decided,
  }: {
    seqs: readonly string[];
    authorize: Authorize;
    decided: Map<string, Visibility>;
  },
): Promise<void> {
  await Promise.all(
    [...principals].map(async ([key, principal]) => {
      try {
        decided.set(key, await authorize(principal, seqs));
      } catch (error) {
        if (!isRefusal(error)) throw error;
      }
    }),
  );
}

/** Whether an access check was refused for good, rather than failing for a while. */
function isRefusal(error: unknown): error is ProtocolError {
  return (
    error instanceof ProtocolError &&
    error.key !== 'UNAVAILABLE' &&
    error.key !== 'TIMEOUT' &&
    error.key !== 'POOL_EXHAUSTED'
  );
}

/**
 * Enqueue on each stream what its role may hear of in `hearing`, and write it: `updated` for the
 * changed URIs it subscribed to, `list_changed` where asked for and the role's visible list
 * changed. Streams are written in slices by time, yielding to the event loop between them.
 */
export async function enqueueHeard(
  streams: StreamRegistry,
  hearing: Hearing | undefined,
): Promise<void> {
  if (hearing === undefined) return;
  const listChanged = listChangedByRole(
    hearing,
    (change) => change.listed !== false && change.prompt !== true,
  );
  const promptsChanged = listChangedByRole(
    hearing,
    (change) => change.prompt === true,
  );
  const uriJson = new Map<string, string>();
  const jsonOf = (uri: string): string => {
    let json = uriJson.get(uri);
    if (json === undefined) uriJson.set(uri, (json = JSON.stringify(uri)));
    return json;
  };
  const targets = new Set<StreamQueue>([
    ...hearing.interested.keys(),
    ...streams.listStreams,
  ]);
  // Slices by time, not by count: requests wait at most about sliceMs behind a broadcast.
  let sliceStart = performance.now();
  let written = 0;
  for (const stream of targets) {
    if (stream.ended) continue;
    const seen = hearing.visibility.get(stream.roleKey);
    if (seen === undefined) continue;
    const changes = hearing.interested.get(stream);
    if (changes !== undefined)
      enqueueUpdates(stream, { changes, seen, jsonOf, streams });
    if (stream.listChanged && listChanged.get(stream.roleKey) === true)
      stream.enqueue(undefined, true);
    if (
      stream.promptsListChanged &&
      promptsChanged.get(stream.roleKey) === true
    )
      stream.enqueuePromptsList();
    stream.deliver(streams.limits);
    written += 1;
    // Let ordinary requests through between slices of a large broadcast.
    if (
      written % 16 === 0 &&
      performance.now() - sliceStart >= streams.sliceMs
    ) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
  }
}

/**
 * Enqueue on `stream` the URIs of `changes` a role that sees `seen` may hear of; a sensitive one
 * only when the stream's caller has consented to reading it within the expiry.
 */
function enqueueUpdates(
  stream: StreamQueue,
  {
    changes,
    seen,
    jsonOf,
    streams,
  }: {
    changes: readonly PublishedChange[];
    seen: Visibility;
    /** A URI as JSON, computed once per batch. */
    jsonOf: (uri: string) => string;
    streams: StreamRegistry;
  },
): void {
  for (const change of changes) {
    if (change.uri === null) continue;
    const entry = seen.get(change.seq);
    // Creates and updates are heard by who can read the result; deletes by who could read it.
    if (
      entry === undefined ||
      !(change.kind === 'deleted' ? entry.before : entry.after)
    )
      continue;
    if (
      (change.sensitive === true || entry.sensitive === true) &&
      !streams.consented(stream.principal, change.uri)
    )
      continue;
    stream.enqueue(jsonOf(change.uri), false);
  }
}

/**
 * Per role: whether a change it may see (before or after) in this batch can alter a list, the
 * list whose changes `alters` picks (resources/list or prompts/list).
 */
function listChangedByRole(
  hearing: Hearing,
  alters: (change: PublishedChange) => boolean,
): Map<string, boolean> {
  const listedSeqs = new Set(
    hearing.changes.filter(alters).map((change) => change.seq),
  );
  const changed = new Map<string, boolean>();
  for (const [key, seen] of hearing.visibility) {
    let any = false;
    for (const [seq, entry] of seen)
      if ((entry.before || entry.after) && listedSeqs.has(seq)) {
        any = true;
        break;
      }
    changed.set(key, any);
  }
  return changed;
}
