// pgmcp.audit (migration 0013): query and explain tool calls, and consents asked, given or declined.
// Written by the login through pgmcp.write_audit, outside the request's own transaction, so a call
// that failed or a consent that was declined is on record either way. Rows go through the audit's
// own connection (db/pool.ts AuditChannel), never waiting behind requests for the request pool.
import { METRICS } from '../../observability/index.js';
import type { DatabaseHandle } from '../pool.js';
import { toDatabaseError } from '../connection/sqlstate.js';
import { inWriteTransaction } from '../connection/write-transaction.js';

/** One audit row; the columns are migration 0013's. */
export interface AuditEntry {
  /** The request's role; null: the login itself. */
  readonly role: string | null;
  /** The token's subject, when there was one. */
  readonly subject: string | null;
  /** 'query', 'explain', 'consent-asked', 'consent-given', 'consent-declined'. */
  readonly action: string;
  /**
   * The statement text, or the URI read. Kept up to the channel's cap in bytes (a NUL, which
   * PostgreSQL cannot store, as the six characters \u0000); its full length is recorded too.
   */
  readonly target: string;
  readonly parameterCount?: number | null;
  readonly rowCount?: number | null;
  readonly durationMs?: number | null;
  /** The PostgreSQL error's SQLSTATE when the call failed. */
  readonly sqlstate?: string | null;
  /** The reason a person gave (consent). */
  readonly reason?: string | null;
  readonly detail?: Record<string, unknown> | null;
  /**
   * Not a column: its transaction waits for the WAL flush (the row written before a statement runs
   * on a standby must outlive a crash of the primary); the others commit without waiting.
   */
  readonly durable?: boolean;
}

/** Most entries one audit transaction writes. */
const BATCH = 100;

interface Pending {
  readonly entry: AuditEntry;
  readonly settle: (error?: Error) => void;
}

/** Per database: entries waiting for the transaction under way to end, and whether one is. */
const queues = new WeakMap<
  DatabaseHandle,
  { waiting: Pending[]; writing: boolean }
>();

/**
 * Write one entry; resolves once its transaction has committed. Entries that arrive while an audit
 * transaction is under way wait for it and then go together in the next one (group commit: one
 * round trip and one commit for every call that ended meanwhile, not one each). The commit does not
 * wait for the WAL flush (synchronous_commit off, these transactions only) unless an entry is
 * `durable`: a server crash may lose the last fraction of a second of entries (wal_writer_delay),
 * never a part of one.
 */
export function writeAudit(
  db: DatabaseHandle,
  entry: AuditEntry,
): Promise<void> {
  let queue = queues.get(db);
  if (queue === undefined) {
    queue = { waiting: [], writing: false };
    queues.set(db, queue);
  }
  const written = new Promise<void>((resolve, reject) =>
    queue.waiting.push({
      entry,
      settle: (error) => {
        METRICS.auditWrites.inc({
          result: error === undefined ? 'written' : 'failed',
        });
        if (error === undefined) resolve();
        else reject(error);
      },
    }),
  );
  if (!queue.writing) void drain(db, queue);
  return written;
}

/**
 * Write what waits, a batch per transaction, until nothing does. A batch PostgreSQL refuses (one
 * entry with a NUL in its text fails them all) goes again one entry at a time, so only the entry
 * at fault fails.
 */
async function drain(
  db: DatabaseHandle,
  queue: { waiting: Pending[]; writing: boolean },
): Promise<void> {
  queue.writing = true;
  while (queue.waiting.length > 0) {
    const batch = queue.waiting.splice(0, BATCH);
    const failed = await written(db, batch);
    if (failed === undefined || batch.length === 1) {
      for (const pending of batch) pending.settle(failed);
      continue;
    }
    for (const pending of batch) pending.settle(await written(db, [pending]));
  }
  queue.writing = false;
}

/** Write `batch` in one transaction: undefined once committed, else why not. */
async function written(
  db: DatabaseHandle,
  batch: readonly Pending[],
): Promise<Error | undefined> {
  try {
    await writeBatch(
      db,
      batch.map((pending) => pending.entry),
    );
    return undefined;
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}

/**
 * One statement, its own transaction (autocommit on the audit's connection): pgmcp.write_audit for
 * each entry, the columns sent as arrays.
 */
async function writeBatch(
  db: DatabaseHandle,
  entries: readonly AuditEntry[],
): Promise<void> {
  const column = <T>(value: (entry: AuditEntry) => T): T[] =>
    entries.map(value);
  const text = (value: string | null) =>
    value === null ? null : value.replaceAll('\0', '\\u0000');
  const client = await db.audit.pool.connect().catch((error: unknown) => {
    throw toDatabaseError(error);
  });
  let broken: Error | undefined;
  try {
    await client.query({
      name: 'pgmcp_write_audit',
      text: `select set_config('synchronous_commit', $12, true),
                  pgmcp.write_audit(e.role, e.subject, e.action, e.target, e.parameter_count,
                                    e.row_count, e.duration_ms, e.sqlstate, e.reason, e.detail,
                                    e.target_length)
             from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::integer[],
                         $6::bigint[], $7::double precision[], $8::text[], $9::text[], $10::jsonb[],
                         $11::integer[])
                  as e(role, subject, action, target, parameter_count, row_count, duration_ms,
                       sqlstate, reason, detail, target_length)`,
      values: [
        column((entry) => text(entry.role)),
        column((entry) => text(entry.subject)),
        column((entry) => text(entry.action)),
        column((entry) => cutToBytes(text(entry.target), db.audit.textBytes)),
        column((entry) => entry.parameterCount ?? null),
        column((entry) => entry.rowCount ?? null),
        column((entry) => entry.durationMs ?? null),
        column((entry) => text(entry.sqlstate ?? null)),
        column((entry) =>
          cutToBytes(text(entry.reason ?? null), db.audit.textBytes),
        ),
        column((entry) =>
          entry.detail === undefined || entry.detail === null
            ? null
            : JSON.stringify(entry.detail),
        ),
        column((entry) => Buffer.byteLength(entry.target)),
        entries.some((entry) => entry.durable === true) ? 'on' : 'off',
      ],
    });
  } catch (error) {
    // A connection failure leaves the client unusable; a refused statement does not.
    const code = (error as { code?: unknown }).code;
    if (typeof code !== 'string' || code.startsWith('08'))
      broken = error instanceof Error ? error : new Error(String(error));
    throw error;
  } finally {
    client.release(broken);
  }
}

/** `value` cut to at most `bytes` bytes of UTF-8, never inside a character. */
function cutToBytes<T extends string | null>(value: T, bytes: number): T {
  if (value === null || value.length * 3 <= bytes) return value;
  const encoded = Buffer.from(value);
  if (encoded.length <= bytes) return value;
  // TextDecoder drops a character cut in half at the end (fatal: false, then trimmed).
  return new TextDecoder()
    .decode(encoded.subarray(0, bytes))
    .replace(/\uFFFD$/, '') as T;
}

/**
 * Count `call` as an audited call under way until it settles: closing the database waits for it,
 * so a call cut short by shutdown still writes its audit row before the connections close.
 */
export function trackAuditedCall<T>(
  db: DatabaseHandle,
  call: Promise<T>,
): Promise<T> {
  const settled = call.then(
    () => undefined,
    () => undefined,
  );
  db.audit.calls.add(settled);
  void settled.then(() => db.audit.calls.delete(settled));
  return call;
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
