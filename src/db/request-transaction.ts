// The request transaction: the only way request handlers touch Postgres (STYLE §2).
import type { Principal } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import type { DatabaseHandle } from './pool.js';
import type { PreparedQuery } from './queries.js';
import { toDatabaseError } from './sqlstate.js';

// Leave every value as Postgres sent it (text); renderers that want text skip the driver's parsing.
const TEXT_OUTPUT = { getTypeParser: () => (value: string) => value };

/** What a handler may do inside its request transaction: run prepared, parameterized queries. */
export interface RequestQueries {
  run<TArgs, TRow>(query: PreparedQuery<TArgs, TRow>, args: TArgs): Promise<TRow[]>;
}

/**
 * Run `work` in one read-only transaction as `principal`. With a role, the transaction first sets
 * the role and claims transaction-locally (set_config(…, true), never session-level on a pooled
 * connection). Without one, each statement is its own read-only transaction (the pool's default),
 * which saves two round trips; handlers that need one snapshot issue one statement.
 * Driver errors become ProtocolErrors through the SQLSTATE table.
 */
export async function runRequestTransaction<T>(
  db: DatabaseHandle,
  principal: Principal,
  signal: AbortSignal,
  work: (queries: RequestQueries) => Promise<T>,
): Promise<T> {
  if (signal.aborted) throw new ProtocolError('TIMEOUT', 'The request was cancelled.');
  let client;
  try {
    client = await db.pool.connect();
  } catch (error) {
    throw toDatabaseError(error);
  }
  const queries: RequestQueries = {
    async run<TArgs, TRow>(query: PreparedQuery<TArgs, TRow>, args: TArgs): Promise<TRow[]> {
      const result = await client.query({
        name: query.name,
        text: query.text,
        values: query.values(args),
        ...(query.textOutput === true ? { types: TEXT_OUTPUT } : {}),
      });
      return result.rows as TRow[];
    },
  };
  let broken: Error | undefined;
  try {
    if (principal.role === null) return await work(queries);
    await client.query('begin read only');
    await client.query("select set_config('role', $1, true), set_config('request.jwt.claims', $2, true)", [
      principal.role,
      JSON.stringify(principal.claims),
    ]);
    const value = await work(queries);
    await client.query('commit');
    return value;
  } catch (error) {
    if (principal.role !== null) {
      await client.query('rollback').catch((rollbackError: unknown) => {
        broken = rollbackError instanceof Error ? rollbackError : new Error('rollback failed');
      });
    }
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
