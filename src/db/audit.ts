// The audit trail's writer (migration 0013): one row through pgmcp.write_audit, as the login and
// outside any request transaction, so what was asked, given or declined is on record either way.
import type { DatabaseHandle } from './pool.js';
import { toDatabaseError } from './sqlstate.js';

/** One audit row; the columns are migration 0013's. */
export interface AuditEntry {
  /** The request's role (null: the login itself). */
  readonly role: string | null;
  /** The token's subject, when there was one. */
  readonly subject: string | null;
  /** 'consent-asked', 'consent-given', 'consent-declined', … */
  readonly action: string;
  /** The URI read, or the statement text. */
  readonly target: string;
  /** The reason a person gave. */
  readonly reason?: string | null;
  readonly detail?: Record<string, unknown> | null;
}

/** Write one row; the pool's sessions are read-only by default, so this transaction says read write. */
export async function writeAudit(
  db: DatabaseHandle,
  entry: AuditEntry,
): Promise<void> {
  let client;
  try {
    client = await db.pool.connect();
  } catch (error) {
    throw toDatabaseError(error);
  }
  let broken: Error | undefined;
  try {
    await client.query('start transaction read write');
    await client.query(
      'select pgmcp.write_audit($1, $2, $3, $4, null, null, null, null, $5, $6)',
      [
        entry.role,
        entry.subject,
        entry.action,
        entry.target,
        entry.reason ?? null,
        entry.detail === undefined || entry.detail === null
          ? null
          : JSON.stringify(entry.detail),
      ],
    );
    await client.query('commit');
  } catch (error) {
    await client.query('rollback').catch((rollback: unknown) => {
      broken = rollback instanceof Error ? rollback : new Error('rollback');
    });
    throw toDatabaseError(error);
  } finally {
    client.release(broken);
  }
}
