// pgmcp.audit (migration 0013): one row per query or explain tool call, written by the login through
// pgmcp.write_audit after the request's own transaction has ended, so a failed call is recorded too.
import type pg from 'pg';
import type { DatabaseHandle } from './pool.js';

export interface AuditEntry {
  /** The request's role; null: the login itself. */
  readonly role: string | null;
  readonly subject: string | null;
  readonly action: 'query' | 'explain';
  readonly statement: string;
  readonly parameterCount: number;
  readonly rowCount: number | null;
  readonly durationMs: number;
  readonly sqlstate: string | null;
}

/** Write one entry in its own read-write transaction (the pool's sessions default to read-only). */
export async function writeAudit(
  db: DatabaseHandle,
  entry: AuditEntry,
): Promise<void> {
  await inWriteTransaction(db, (client) =>
    client.query(
      'select pgmcp.write_audit($1, $2, $3, $4, $5, $6, $7, $8, null, null)',
      [
        entry.role,
        entry.subject,
        entry.action,
        entry.statement,
        entry.parameterCount,
        entry.rowCount,
        entry.durationMs,
        entry.sqlstate,
      ],
    ),
  );
}

/** Delete entries older than the retention period (pgmcp.prune_audit); returns how many went. */
export async function pruneAudit(
  db: DatabaseHandle,
  retentionSeconds: number,
): Promise<number> {
  const { rows } = await inWriteTransaction(db, (client) =>
    client.query<{ pruned: string }>(
      'select pgmcp.prune_audit(make_interval(secs => $1)) as pruned',
      [retentionSeconds],
    ),
  );
  return Number(rows[0]?.pruned ?? 0);
}

async function inWriteTransaction<T>(
  db: DatabaseHandle,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await db.pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('begin read write');
    const result = await work(client);
    await client.query('commit');
    return result;
  } catch (error) {
    await client.query('rollback').catch((rollbackError: unknown) => {
      broken = rollbackError as Error;
    });
    throw error;
  } finally {
    client.release(broken);
  }
}
