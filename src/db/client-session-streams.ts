// What every replica shares of a client session's stream (issue 34 point 1, migration 0034): the
// session's subscriptions, the claim of its stream by generation, and the channel that tells the
// replica holding the stream to read them again.
import type { Principal } from '../auth/index.js';
import type { ClientSessionKeys } from './client-session-keys.js';
import { toDatabaseError } from './connection/sqlstate.js';
import { writeUnnamedStatement as write } from './connection/write-transaction.js';
import type { DatabaseHandle } from './pool.js';

/**
 * The channel on which a session's row changes are announced: its payload is the session's id
 * digest in hex, as a JSON string; a hint to read the session again, never its contents.
 */
export const CLIENT_SESSIONS_CHANNEL = 'pgmcp_sessions';

/** What subscribe did: subscribed, refused at the cap of URIs, or the session is not live. */
export type ClientSubscribeOutcome = 'subscribed' | 'full' | 'gone';

/** What the replica holding a session's stream reads of it. */
export interface ClientSessionStreamState {
  /** The generation of the newest stream claimed; an older stream is no longer the session's. */
  readonly generation: bigint;
  readonly logLevel: string | null;
  /** Subscribed URIs as the client named them → normalized. */
  readonly subscriptions: ReadonlyMap<string, string>;
}

/** A session's stream and subscriptions, shared by every replica; each call checks the binding. */
export interface ClientSessionStreams {
  subscribe(
    id: string,
    principal: Principal,
    entry: { readonly uri: string; readonly key: string; readonly max: number },
  ): Promise<ClientSubscribeOutcome>;
  /** False when the session is not live; harmless for a URI not subscribed. */
  unsubscribe(id: string, principal: Principal, uri: string): Promise<boolean>;
  /** Claim the session's stream: the new generation, or undefined when the session is not live. */
  claimStream(id: string, principal: Principal): Promise<bigint | undefined>;
  /** The session as its stream's holder needs it; undefined when it is not live. */
  streamState(
    id: string,
    principal: Principal,
  ): Promise<ClientSessionStreamState | undefined>;
  /** How CLIENT_SESSIONS_CHANNEL names session `id`. */
  eventKey(id: string): string;
}

/** How the store digests a session's id and its caller (client-sessions.ts). */
export interface SessionDigests {
  readonly keys: (id: string, principal: Principal) => ClientSessionKeys;
  readonly idHash: (id: string) => Buffer;
}

/** The streams' part of the session store, over the store's own keys. */
export function clientSessionStreams(
  db: DatabaseHandle,
  { keys, idHash }: SessionDigests,
): ClientSessionStreams {
  return {
    subscribe: async (id, principal, { uri, key, max }) => {
      const { idHash, principalHash } = keys(id, principal);
      const rows = await write<{ outcome: ClientSubscribeOutcome }>(
        db,
        'select pgmcp.subscribe_legacy_session($1, $2, $3, $4, $5) as outcome',
        [idHash, principalHash, uri, key, max],
      );
      return rows[0]?.outcome ?? 'gone';
    },
    unsubscribe: async (id, principal, uri) => {
      const { idHash, principalHash } = keys(id, principal);
      const rows = await write<{ live: boolean }>(
        db,
        'select pgmcp.unsubscribe_legacy_session($1, $2, $3) as live',
        [idHash, principalHash, uri],
      );
      return rows[0]?.live === true;
    },
    claimStream: async (id, principal) => {
      const { idHash, principalHash } = keys(id, principal);
      const rows = await write<{ generation: string | null }>(
        db,
        'select pgmcp.claim_legacy_session_stream($1, $2) as generation',
        [idHash, principalHash],
      );
      const generation = rows[0]?.generation;
      return generation === null || generation === undefined
        ? undefined
        : BigInt(generation);
    },
    streamState: (id, principal) => readStreamState(db, keys(id, principal)),
    eventKey: (id) => idHash(id).toString('hex'),
  };
}

async function readStreamState(
  db: DatabaseHandle,
  { idHash, principalHash }: ClientSessionKeys,
): Promise<ClientSessionStreamState | undefined> {
  try {
    // One statement in the pool's read-only implicit transaction.
    const { rows } = await db.pool.query<{
      stream_generation: string;
      log_level: string | null;
      subscriptions: Record<string, string>;
    }>('select * from pgmcp.legacy_session_stream_state($1, $2)', [
      idHash,
      principalHash,
    ]);
    const row = rows[0];
    if (row === undefined) return undefined;
    return {
      generation: BigInt(row.stream_generation),
      logLevel: row.log_level,
      subscriptions: new Map(Object.entries(row.subscriptions)),
    };
  } catch (error) {
    throw toDatabaseError(error);
  }
}
