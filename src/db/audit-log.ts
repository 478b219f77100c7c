// pgmcp.audit (migration 0013): query and explain tool calls, and consents asked, given or declined.
// Written by the login through pgmcp.write_audit, outside the request's own transaction, so a call
// that failed or a consent that was declined is on record either way.
import type { DatabaseHandle } from './pool.js';
import { inWriteTransaction } from './write-transaction.js';

/** One audit row; the columns are migration 0013's. */
export interface AuditEntry {
  /** The request's role; null: the login itself. */
  readonly role: string | null;
  /** The token's subject, when there was one. */
  readonly subject: string | null;
  /** 'query', 'explain', 'consent-asked', 'consent-given', 'consent-declined'. */
  readonly action: string;
  /** The statement text, or the URI read. */
  readonly target: string;
  readonly parameterCount?: number | null;
  readonly rowCount?: number | null;
  readonly durationMs?: number | null;
  /** The PostgreSQL error's SQLSTATE when the call failed. */
  readonly sqlstate?: string | null;
  /** The reason a person gave (consent). */
  readonly reason?: string | null;
  readonly detail?: Record<string, unknown> | null;
}

/**
 * Write one entry in its own read-write transaction (the pool's sessions default to read-only).
 * Its commit does not wait for the WAL flush (synchronous_commit off, this transaction only): the
 * call it records answers sooner, and a server crash may lose the last fraction of a second of
 * entries (wal_writer_delay), never a part of one.
 */
export async function writeAudit(
  db: DatabaseHandle,
  entry: AuditEntry,
): Promise<void> {
  await inWriteTransaction(db, (client) =>
    client.query(
      `select set_config('synchronous_commit', 'off', true),
              pgmcp.write_audit($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [
        entry.role,
        entry.subject,
        entry.action,
        entry.target,
        entry.parameterCount ?? null,
        entry.rowCount ?? null,
        entry.durationMs ?? null,
        entry.sqlstate ?? null,
        entry.reason ?? null,
        entry.detail === undefined || entry.detail === null
          ? null
          : JSON.stringify(entry.detail),
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
