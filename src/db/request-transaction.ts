// The request transaction: the only way request handlers touch Postgres (STYLE §2).
import type { Principal } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import type { DatabaseHandle } from './pool.js';
import type { PreparedQuery } from './queries.js';
import { toDatabaseError } from './sqlstate.js';

// Leave every value as Postgres sent it (text); renderers that want text skip the driver's parsing.
const TEXT_OUTPUT = { getTypeParser: () => (value: string) => value };

const SET_IDENTITY = {
  name: 'pgmcp_set_identity',
  text: "select set_config('role', $1, true), set_config('request.jwt.claims', $2, true)",
};

/**
 * Run one prepared query as `principal`, in one read-only transaction and one round trip.
 *
 * Without a role the statement runs alone: the pool's sessions default to read-only, so it is its
 * own read-only transaction. With a role, `begin read only`, the transaction-local role and claims
 * (set_config(…, true), never session-level on a pooled connection) and the query go out together
 * on the pool's pipelined connection and the commit follows; PostgreSQL answers them in order.
 * Driver errors become ProtocolErrors through the SQLSTATE table.
 */
export async function runRequestQuery<TArgs, TRow>(
  db: DatabaseHandle,
  principal: Principal,
  signal: AbortSignal,
  query: PreparedQuery<TArgs, TRow>,
  args: TArgs,
): Promise<TRow[]> {
  if (signal.aborted) throw new ProtocolError('TIMEOUT', 'The request was cancelled.');
  let client;
  try {
    client = await db.pool.connect();
  } catch (error) {
    throw toDatabaseError(error);
  }
  const config = {
    name: query.name,
    text: query.text,
    values: query.values(args),
    ...(query.textOutput === true ? { types: TEXT_OUTPUT } : {}),
  };
  let broken: Error | undefined;
  try {
    if (principal.role === null) return (await client.query(config)).rows as TRow[];
    // Sent back to back without waiting (pipeline mode); the first failure wins and the commit
    // of an aborted transaction is answered with a rollback.
    const settled = await Promise.allSettled([
      client.query('begin read only'),
      client.query({ ...SET_IDENTITY, values: [principal.role, JSON.stringify(principal.claims)] }),
      client.query(config),
      client.query('commit'),
    ]);
    const failure = settled.find((outcome) => outcome.status === 'rejected');
    if (failure !== undefined) throw failure.reason;
    const work = settled[2];
    return work?.status === 'fulfilled' ? (work.value.rows as TRow[]) : [];
  } catch (error) {
    if (isConnectionError(error)) broken = error instanceof Error ? error : new Error('connection error');
    throw toDatabaseError(error);
  } finally {
    client.release(broken);
  }
}

/** True when the client must not go back to the pool: no SQLSTATE (a socket failure) or a connection class. */
function isConnectionError(error: unknown): boolean {
  if (error instanceof ProtocolError) return false;
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true;
  return code.startsWith('08') || code.startsWith('57P');
}
