// The request transaction: the only way request handlers touch Postgres (STYLE §2).
import type pg from 'pg';
import type { Principal } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import { ImplicitTransaction } from './implicit-transaction.js';
import { PIPELINE, type DatabaseHandle } from './pool.js';
import type { PreparedQuery } from './prepared.js';
import { toDatabaseError } from './sqlstate.js';

const SET_IDENTITY = {
  name: 'pgmcp_set_identity',
  text: "select set_config('role', $1, true), set_config('request.jwt.claims', $2, true)",
} as const;

/**
 * Run one prepared query as `principal`, in one read-only transaction and one round trip.
 *
 * Without a role the statement runs alone: the pool's sessions default to read-only, so it is its
 * own read-only transaction. With a role, the identity statement (set_config('role', …, true) and
 * the claims, transaction-local, never session-level on a pooled connection) and the query go out
 * together before one Sync: PostgreSQL runs them as one implicit read-only transaction, and the
 * role ends with it. Driver errors become ProtocolErrors through the SQLSTATE table. An already
 * cancelled request (`cancellation`: a signal, or a request context, which answers without making one)
 * is refused before taking a connection.
 */
export async function runRequestQuery<TArgs, TRow>(
  db: DatabaseHandle,
  principal: Principal,
  cancellation: { readonly aborted: boolean },
  query: PreparedQuery<TArgs, TRow>,
  args: TArgs,
): Promise<TRow[]> {
  if (cancellation.aborted)
    throw new ProtocolError('TIMEOUT', 'The request was cancelled.');
  let client;
  try {
    client = await db.pool.connect();
  } catch (error) {
    throw toDatabaseError(error);
  }
  let broken: Error | undefined;
  try {
    const statement = {
      name: query.name,
      text: query.text,
      values: query.values(args),
      textOutput: query.textOutput,
    };
    if (principal.role === null && query.textOutput !== true)
      return (await client.query(statement)).rows as TRow[];
    if (!PIPELINE)
      return (await runUnpipelined(client, principal, statement)) as TRow[];
    // Text rows come back as the driver's own field arrays, which pg's Query would copy into objects.
    const transaction = new ImplicitTransaction(
      principal.role === null
        ? [statement]
        : [
            {
              ...SET_IDENTITY,
              values: [principal.role, JSON.stringify(principal.claims)],
            },
            statement,
          ],
    );
    void client.query(transaction as unknown as pg.Submittable);
    try {
      const rows = await transaction.result;
      return (rows.at(-1) ?? []) as TRow[];
    } finally {
      if (transaction.unsafeToReuse)
        broken = new Error(
          'a prepared statement may be half-made after an error',
        );
    }
  } catch (error) {
    if (isConnectionError(error))
      broken = error instanceof Error ? error : new Error('connection error');
    throw toDatabaseError(error);
  } finally {
    client.release(broken);
  }
}

const TEXT_TYPES = { getTypeParser: () => (value: string) => value };

/** The same transaction through pg's public API: begin, identity, query, commit, a round trip each. */
async function runUnpipelined(
  client: pg.PoolClient,
  principal: Principal,
  statement: {
    name: string;
    text: string;
    values: unknown[];
    textOutput?: boolean | undefined;
  },
): Promise<unknown[]> {
  const config: pg.QueryConfig = {
    name: statement.name,
    text: statement.text,
    values: statement.values,
    ...(statement.textOutput === true
      ? { rowMode: 'array', types: TEXT_TYPES }
      : {}),
  };
  if (principal.role === null)
    return (await client.query<unknown[]>(config)).rows;
  await client.query('begin');
  try {
    await client.query({
      ...SET_IDENTITY,
      values: [principal.role, JSON.stringify(principal.claims)],
    });
    const { rows } = await client.query<unknown[]>(config);
    await client.query('commit');
    return rows;
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  }
}

/** True when the client must not go back to the pool: no SQLSTATE (a socket failure) or a connection class. */
function isConnectionError(error: unknown): boolean {
  if (error instanceof ProtocolError) return false;
  const code =
    typeof error === 'object' && error !== null
      ? (error as { code?: unknown }).code
      : undefined;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true;
  return code.startsWith('08') || code.startsWith('57P');
}
