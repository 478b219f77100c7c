// A batch the feed leader publishes (pgmcp.feed_batches, migration 0035) as JSON and back: the change
// log rows it read and, per role, what the role may hear of each.
import type { Principal } from '../auth/index.js';
import type { ChangeKind, ChangeRow } from '../db/index.js';
import type { Visibility } from './role-batches.js';

/** A change log row as stored in a batch (txid as text: JSON has no 64-bit integers). */
type StoredRow = [
  seq: string,
  txid: string,
  relation: string,
  uri: string | null,
  kind: ChangeKind,
  detail: unknown,
];

/** One role's decisions as stored: [seq, before, after, sensitive] for each change of the batch. */
type StoredDecision = [
  seq: string,
  before: boolean,
  after: boolean,
  sensitive: boolean,
];

/**
 * A role's key in a batch: its name, or "" for the login (no role name is empty; jsonb cannot hold
 * the NUL of stream-queue.ts's role keys).
 */
export function batchRoleKey(principal: Principal): string {
  return principal.role ?? '';
}

export function encodeRows(rows: readonly ChangeRow[]): StoredRow[] {
  return rows.map((row) => [
    row.seq,
    row.txid.toString(),
    row.relation,
    row.uri,
    row.kind,
    row.detail,
  ]);
}

export function decodeRows(stored: unknown): ChangeRow[] {
  if (!Array.isArray(stored)) return [];
  return (stored as StoredRow[]).map(
    ([seq, txid, relation, uri, kind, detail]) => ({
      seq,
      txid: BigInt(txid),
      relation,
      uri,
      kind,
      detail,
    }),
  );
}

export function encodeDecisions(
  decided: ReadonlyMap<string, Visibility>,
): Record<string, StoredDecision[]> {
  const stored: Record<string, StoredDecision[]> = {};
  for (const [key, visibility] of decided)
    stored[key] = [...visibility].map(([seq, entry]) => [
      seq,
      entry.before,
      entry.after,
      entry.sensitive === true,
    ]);
  return stored;
}

export function decodeDecisions(stored: unknown): Map<string, Visibility> {
  const decided = new Map<string, Visibility>();
  if (typeof stored !== 'object' || stored === null) return decided;
  for (const [key, entries] of Object.entries(
    stored as Record<string, StoredDecision[]>,
  ))
    decided.set(
      key,
      new Map(
        entries.map(([seq, before, after, sensitive]) => [
          seq,
          { before, after, sensitive },
        ]),
      ),
    );
  return decided;
}

/** The principals a replica registered (pgmcp.feed_replicas.principals), by batch role key. */
export function decodePrincipals(
  lists: readonly unknown[],
): Map<string, Principal> {
  const found = new Map<string, Principal>();
  for (const list of lists) {
    if (!Array.isArray(list)) continue;
    for (const item of list as { role?: unknown; claims?: unknown }[]) {
      const role = typeof item.role === 'string' ? item.role : null;
      const claims =
        typeof item.claims === 'object' && item.claims !== null
          ? (item.claims as Record<string, unknown>)
          : {};
      const principal: Principal = { role, claims };
      const key = batchRoleKey(principal);
      if (!found.has(key)) found.set(key, principal);
    }
  }
  return found;
}
