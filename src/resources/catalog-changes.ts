// The pull path for changes (pg://{database}?changes_since={token}): hosts that drop
// notifications/resources/updated ask instead which URIs changed since a token, from pgmcp.changes,
// as the role may read them. The main database's log holds the stored resources' changes too, so
// one URI per database serves both (docs/databases.md "Changes since a token").
import type { Principal } from '../auth/index.js';
import {
  CHANGES_SINCE,
  runRequestQuery,
  type PulledChangeRow,
} from '../db/index.js';
import { ProtocolError } from '../errors.js';
import { databaseUri } from './catalog-uri.js';
import { deliveredChanges } from './delivered-changes.js';
import { type CatalogSource } from './catalog-source.js';

/**
 * Where a reader stands: the capture epoch it read in (undefined in a token made before epochs
 * were in tokens), `time` (epoch seconds) and `start` (snapshot xmin) when its chain of pages
 * began, the `horizon` its rows are read from, and the last row read (txid, seq) on a page chain.
 */
interface ChangeToken {
  readonly epoch: string | undefined;
  readonly time: string;
  readonly start: string;
  readonly horizon: string;
  readonly afterTxid: string;
  readonly afterSeq: string;
}

const TOKEN =
  /^(?:1|2\.(\d{1,19}))\.(\d{1,19})\.(\d{1,20})\.(\d{1,20})\.(\d{1,20})\.(\d{1,19})$/;

function encodeToken(token: ChangeToken): string {
  return `2.${token.epoch ?? '0'}.${token.time}.${token.start}.${token.horizon}.${token.afterTxid}.${token.afterSeq}`;
}

function decodeToken(text: string): ChangeToken | undefined {
  const match = TOKEN.exec(text);
  if (match === null) return undefined;
  const [, epoch, time = '', start = ''] = match;
  const [horizon = '', afterTxid = '', afterSeq = ''] = match.slice(4);
  return { epoch, time, start, horizon, afterTxid, afterSeq };
}

/**
 * The changes since `token` as one JSON content: the URIs the role may read that changed (at
 * least once each: a URI may come again on a later read), `next` (the URI to read next) and
 * whether more are waiting. An empty token answers only the current token. A token the log may no
 * longer answer in full (refuseStale) is INVALID_PARAMS saying to re-list.
 */
export async function readChanges(
  source: CatalogSource,
  request: {
    readonly principal: Principal;
    readonly cancellation: { readonly aborted: boolean };
  },
  options: {
    readonly token: string;
    readonly pageSize: number;
    readonly retentionSeconds: number;
  },
): Promise<string[]> {
  const given = options.token === '' ? undefined : decodeToken(options.token);
  if (options.token !== '' && given === undefined)
    throw new ProtocolError(
      'INVALID_PARAMS',
      `Invalid change token: read ${databaseUri(source.name, { changes_since: '' })} for a current one.`,
    );
  // The primary's moves so far: a position read on a former one raises no floor.
  const moves = source.db.floor?.moves;
  const rows = await runRequestQuery(
    { db: source.db, ...request },
    CHANGES_SINCE,
    {
      horizon: given?.horizon ?? '0',
      afterTxid: given?.afterTxid ?? '0',
      afterSeq: given?.afterSeq ?? '0',
      // Nothing to read for an empty token: only its clock and snapshot.
      limit: given === undefined ? 0 : options.pageSize + 1,
    },
  );
  const now = rows[0]?.now ?? '0';
  const xmin = rows[0]?.xmin ?? '0';
  const epoch = rows[0]?.epoch ?? '0';
  refuseStale(source, options.retentionSeconds, { given, now, epoch });
  const logged = rows.filter((row) => row.seq !== null);
  // Reads after this page must see the changes it names, as after a notification of them.
  if (logged.length > 0 && rows[0] !== undefined)
    source.db.floor?.raiseFloor(BigInt(rows[0].insert_lsn), moves);
  const page = logged.slice(0, options.pageSize);
  const more = logged.length > options.pageSize;
  const last = page.at(-1);
  const next = { ...nextToken(given, { now, xmin, more, last }), epoch };
  const changes = changedUris(source, page);
  const token = encodeToken(next);
  return [
    JSON.stringify({
      uri: databaseUri(source.name, { changes_since: options.token }),
      mimeType: 'application/json',
      text: JSON.stringify({
        changes: [...changes].map(([uri, kind]) => ({ uri, kind })),
        token,
        next: databaseUri(source.name, { changes_since: token }),
        more,
      }),
    }),
  ];
}

/**
 * A token the log may no longer answer in full is INVALID_PARAMS, saying to re-list: one older
 * than the log's retention, or one from before a new capture epoch (the WAL source's slot made
 * anew, a transaction too large to log row by row, a switch of change source), which may have left
 * changes out of the log; the streams resync then, and a puller re-lists.
 */
function refuseStale(
  source: CatalogSource,
  retentionSeconds: number,
  read: {
    readonly given: ChangeToken | undefined;
    readonly now: string;
    readonly epoch: string;
  },
): void {
  const { given, now, epoch } = read;
  if (given === undefined) return;
  const fresh = `re-list with resources/list and read ${databaseUri(source.name, { changes_since: '' })} for a current token`;
  if (Number(now) - Number(given.time) > retentionSeconds)
    throw new ProtocolError(
      'INVALID_PARAMS',
      `The change token is older than the change log's retention (${retentionSeconds} s), so changes may be missing: ${fresh}.`,
    );
  if (given.epoch !== undefined && given.epoch !== epoch)
    throw new ProtocolError(
      'INVALID_PARAMS',
      `Changes were captured anew since this token, so some may be missing from the log: ${fresh}.`,
    );
}

/** The token to continue from after a page read with `given` (undefined: an empty token). */
function nextToken(
  given: ChangeToken | undefined,
  read: {
    readonly now: string;
    readonly xmin: string;
    readonly more: boolean;
    readonly last: PulledChangeRow | undefined;
  },
): Omit<ChangeToken, 'epoch'> {
  // A chain of pages starts where a token has no last row. It keeps its start (clock, xmin) and
  // its last page starts the next chain from that xmin: a transaction in flight while the chain
  // was read has a txid at or above it, so it is read next time, never skipped.
  const start =
    given === undefined || given.afterTxid === '0'
      ? { time: read.now, xmin: read.xmin }
      : { time: given.time, xmin: given.start };
  return given !== undefined && read.more && read.last !== undefined
    ? {
        time: start.time,
        start: start.xmin,
        horizon: given.horizon,
        afterTxid: read.last.txid ?? '0',
        afterSeq: read.last.seq ?? '0',
      }
    : {
        time: start.time,
        start: start.xmin,
        horizon: start.xmin,
        afterTxid: '0',
        afterSeq: '0',
      };
}

/** The URIs a page's changes deliver, each once with its latest kind, in order of their last change. */
function changedUris(
  source: CatalogSource,
  page: readonly PulledChangeRow[],
): Map<string, string> {
  const changes = new Map<string, string>();
  for (const row of page)
    for (const change of deliveredChanges(source, {
      seq: row.seq ?? '',
      uri: row.uri,
      kind: row.kind ?? 'updated',
      detail: row.detail,
    }))
      if (change.uri !== null) {
        changes.delete(change.uri);
        changes.set(change.uri, change.kind);
      }
  return changes;
}
