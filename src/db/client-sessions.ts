// Sessions a client holds by id across requests, stored in pgmcp.legacy_sessions (migrations/0012)
// and written by the server's login through SECURITY DEFINER functions (each request's check reads
// the keys and expiry directly), so every replica on the database shares them.
import { hash } from 'node:crypto';
import { sql } from 'kysely';
import { principalIdentity, type Principal } from '../auth/index.js';
import type { DatabaseHandle } from './pool.js';
import { builder, prepare } from './connection/prepared.js';
import type { LeadingStatement } from '../leading-statement.js';
import { writeUnnamedStatement as write } from './connection/write-transaction.js';
import { toDatabaseError } from './connection/sqlstate.js';
import type { ClientSessionKeys } from './client-session-keys.js';
import {
  clientSessionStreams,
  type ClientSessionStreams,
} from './client-session-streams.js';

/** What a session row holds besides its keys (both are SHA-256 digests, never the id itself). */
export interface ClientSessionRow {
  readonly protocolVersion: string;
  readonly clientInfo: unknown;
  readonly clientCapabilities: unknown;
  readonly logLevel: string | null;
}

/** Store a new session; false when `role` already holds `maxPerRole` live sessions. */
export async function openClientSession(
  db: DatabaseHandle,
  keys: ClientSessionKeys,
  session: ClientSessionRow & {
    readonly role: string | null;
    readonly idleSeconds: number;
    readonly maxPerRole: number;
  },
): Promise<boolean> {
  const rows = await write<{ opened: boolean }>(
    db,
    'select pgmcp.open_legacy_session($1, $2, $3, $4, $5, $6, $7, $8) as opened',
    [
      keys.idHash,
      keys.principalHash,
      session.role,
      session.protocolVersion,
      JSON.stringify(session.clientInfo),
      JSON.stringify(session.clientCapabilities),
      session.idleSeconds,
      session.maxPerRole,
    ],
  );
  return rows[0]?.opened === true;
}

/** The live session of these keys, its idle expiry renewed; undefined when unknown or expired. */
export async function touchClientSession(
  db: DatabaseHandle,
  keys: ClientSessionKeys,
  idleSeconds: number,
): Promise<ClientSessionRow | undefined> {
  const rows = await write<{
    protocol_version: string;
    client_info: unknown;
    client_capabilities: unknown;
    log_level: string | null;
  }>(db, 'select * from pgmcp.touch_legacy_session($1, $2, $3)', [
    keys.idHash,
    keys.principalHash,
    idleSeconds,
  ]);
  const row = rows[0];
  return row === undefined ? undefined : sessionRowOf(row);
}

/** A session row's columns as a ClientSessionRow. */
function sessionRowOf(row: {
  protocol_version: string;
  client_info: unknown;
  client_capabilities: unknown;
  log_level: string | null;
}): ClientSessionRow {
  return {
    protocolVersion: row.protocol_version,
    clientInfo: row.client_info,
    clientCapabilities: row.client_capabilities,
    logLevel: row.log_level,
  };
}

interface FoundRow {
  protocol_version: string;
  client_info: unknown;
  client_capabilities: unknown;
  log_level: string | null;
  renew_due: boolean;
}

type Found = ClientSessionRow & { readonly renewDue: boolean };

/** The statement findClientSession runs (also sent first in a request's transaction). */
function findStatement(
  keys: ClientSessionKeys,
  renewBelowSeconds: number,
): { name: string; text: string; values: unknown[] } {
  return {
    name: 'pgmcp_find_legacy_session',
    text: 'select * from pgmcp.find_legacy_session($1, $2, $3)',
    values: [keys.idHash, keys.principalHash, renewBelowSeconds],
  };
}

function foundOf(rows: readonly unknown[]): Found | undefined {
  const row = rows[0] as FoundRow | undefined;
  return row === undefined
    ? undefined
    : { ...sessionRowOf(row), renewDue: row.renew_due };
}

/**
 * The live session of these keys, read without writing; `renewDue` when its expiry is less than
 * `renewBelowSeconds` away. undefined when unknown, expired or another principal's.
 */
export async function findClientSession(
  db: DatabaseHandle,
  keys: ClientSessionKeys,
  renewBelowSeconds: number,
): Promise<Found | undefined> {
  try {
    // One statement in the pool's read-only implicit transaction: no WAL, no dead row version.
    const { rows } = await db.pool.query<FoundRow>(
      findStatement(keys, renewBelowSeconds),
    );
    return foundOf(rows);
  } catch (error) {
    throw toDatabaseError(error);
  }
}

/**
 * A held session's check: one row when the session is live and this principal's, saying whether
 * its expiry is due to be pushed back; no row otherwise. A plain SELECT by primary key as the
 * login, which may read these three columns (migration 0027): through a SECURITY DEFINER function
 * the check cost PostgreSQL more CPU (docs/benchmarks.md, History).
 */
const CHECK = prepare(
  'pgmcp_legacy_session_check',
  (args: {
    idHash: Buffer;
    principalHash: Buffer;
    renewBelowSeconds: number;
  }) =>
    builder
      .selectFrom('pgmcp.legacy_sessions')
      .select(
        sql<boolean>`expires_at < now() + make_interval(secs => ${args.renewBelowSeconds}::integer)`.as(
          'due',
        ),
      )
      .where('id_hash', '=', args.idHash)
      .where('principal_hash', '=', args.principalHash)
      .where('expires_at', '>', sql<Date>`now()`),
);

/** When a check pushes a session's expiry back (below this many seconds left), and how far. */
interface CheckTiming {
  readonly renewBelowSeconds: number;
  readonly lease: number;
}

/**
 * A held session's check (CHECK) as a request's leading statement, read on its own if the request
 * ran no statement; when due, the expiry is pushed `lease` seconds ahead.
 */
function checkInRequest(
  db: DatabaseHandle,
  keys: ClientSessionKeys,
  { renewBelowSeconds, lease }: CheckTiming,
): ClientSessionCheck {
  const values = CHECK.values({
    idHash: keys.idHash,
    principalHash: keys.principalHash,
    renewBelowSeconds,
  });
  let rows: unknown[] | undefined;
  const due = async (): Promise<boolean | null> => {
    try {
      // Alone, in the pool's read-only implicit transaction: no WAL, no dead row version.
      rows ??= (
        await db.pool.query({ name: CHECK.name, text: CHECK.text, values })
      ).rows;
    } catch (error) {
      throw toDatabaseError(error);
    }
    return (rows[0] as { due: boolean | null } | undefined)?.due ?? null;
  };
  const decide = async (): Promise<boolean> => {
    const renew = await due();
    if (renew === null) return false;
    // Renewal re-checks liveness: a session ended meanwhile is not brought back.
    return !renew || (await touchClientSession(db, keys, lease)) !== undefined;
  };
  // Asked once per notice and once before the answer: checked (and renewed) once.
  let live: Promise<boolean> | undefined;
  return {
    // Built field by field: an object spread here showed in profiles of every session request.
    statement: {
      name: CHECK.name,
      text: CHECK.text,
      values,
      db,
      settle: (found) => (rows = found),
    },
    result: () => (live ??= decide()),
  };
}

export async function setClientSessionLevel(
  db: DatabaseHandle,
  keys: ClientSessionKeys,
  level: string,
): Promise<void> {
  await write(db, 'select pgmcp.set_legacy_session_level($1, $2, $3)', [
    keys.idHash,
    keys.principalHash,
    level,
  ]);
}

/** End a session; false when it was unknown, expired or another principal's. */
export async function closeClientSession(
  db: DatabaseHandle,
  keys: ClientSessionKeys,
): Promise<boolean> {
  const rows = await write<{ closed: boolean }>(
    db,
    'select pgmcp.close_legacy_session($1, $2) as closed',
    [keys.idHash, keys.principalHash],
  );
  return rows[0]?.closed === true;
}

/**
 * Sessions by their client-held id, bound to a principal; what the HTTP transport is given, with
 * their streams' shared state (client-session-streams.ts).
 */
export interface ClientSessionStore extends ClientSessionStreams {
  /** False when the principal's role already holds its cap of live sessions. */
  open(
    id: string,
    principal: Principal,
    session: Omit<ClientSessionRow, 'logLevel'>,
  ): Promise<boolean>;
  touch(
    id: string,
    principal: Principal,
  ): Promise<ClientSessionRow | undefined>;
  /**
   * The same as `touch`, for a request whose handler runs a request transaction: `statement` goes
   * first in that transaction's round trip (runRequestQuery), and `result` is the session from the
   * rows it brought back, or read on its own when the request ran no statement.
   */
  check(id: string, principal: Principal): ClientSessionCheck;
  setLevel(id: string, principal: Principal, level: string): Promise<void>;
  close(id: string, principal: Principal): Promise<boolean>;
}

export interface ClientSessionCheck {
  readonly statement: LeadingStatement;
  /** Whether the session is live and this principal's; its expiry pushed back when due. */
  result(): Promise<boolean>;
}

/** Session ids whose digest is kept; past this many the table starts afresh. */
const ID_HASHES_KEPT = 10_000;

/**
 * Keys are digests: the id's SHA-256 (a leaked table names no usable session) and the SHA-256 of
 * the caller's identity (auth's principalIdentity: the role with the token's issuer and subject,
 * so a fresh token of the same caller keeps the session; without a subject, the token's own).
 */
export function createClientSessionStore(
  db: DatabaseHandle,
  limits: { readonly idleSeconds: number; readonly maxPerRole: number },
): ClientSessionStore {
  // Every request of a session hashes the same id and principal: each digest is made once (the
  // principal is the token cache's object for a token; ids are kept as the held sessions keep them).
  const idHashes = new Map<string, Buffer>();
  const principalHashes = new WeakMap<Principal, Buffer>();
  const idHashOf = (id: string): Buffer => {
    let idHash = idHashes.get(id);
    if (idHash === undefined) {
      if (idHashes.size >= ID_HASHES_KEPT) idHashes.clear();
      idHash = hash('sha256', id, 'buffer');
      idHashes.set(id, idHash);
    }
    return idHash;
  };
  const keys = (id: string, principal: Principal): ClientSessionKeys => {
    const idHash = idHashOf(id);
    let principalHash = principalHashes.get(principal);
    if (principalHash === undefined) {
      principalHash = hash('sha256', principalIdentity(principal), 'buffer');
      principalHashes.set(principal, principalHash);
    }
    return { idHash, principalHash };
  };
  // Each request reads its session (a DELETE or expiry through any replica is seen at once) but
  // pushes the expiry back only when less than the idle time remains, to 1.5× the idle time ahead:
  // at most one UPDATE per half idle time per session, and a session always outlives its last
  // request by at least the idle time (by at most 1.5× it).
  const lease = Math.ceil(limits.idleSeconds * 1.5);
  const timing = { renewBelowSeconds: limits.idleSeconds, lease };
  const renewed = async (
    found: Found | undefined,
    sessionKeys: ClientSessionKeys,
  ): Promise<ClientSessionRow | undefined> =>
    found === undefined || !found.renewDue
      ? found
      : // Renewal re-checks liveness: a session ended meanwhile is not brought back.
        touchClientSession(db, sessionKeys, lease);
  return {
    ...clientSessionStreams(db, { keys, idHash: idHashOf }),
    open: (id, principal, session) =>
      openClientSession(db, keys(id, principal), {
        ...session,
        logLevel: null,
        role: principal.role,
        idleSeconds: lease,
        maxPerRole: limits.maxPerRole,
      }),
    touch: async (id, principal) => {
      const sessionKeys = keys(id, principal);
      return renewed(
        await findClientSession(db, sessionKeys, limits.idleSeconds),
        sessionKeys,
      );
    },
    check: (id, principal) => checkInRequest(db, keys(id, principal), timing),
    setLevel: (id, principal, level) =>
      setClientSessionLevel(db, keys(id, principal), level),
    close: (id, principal) => closeClientSession(db, keys(id, principal)),
  };
}
