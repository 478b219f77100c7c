// Where a read runs: a standby the database's StandbySet picks, else the primary. A standby that
// fails as a server fails (its connection lost, a recovery conflict) hands the read to the
// primary, which runs it again: reads are read-only, so a second run changes nothing. When the
// primary may not take it (whenUnavailable: fail), the read fails as UNAVAILABLE: the standby's
// fault is not the caller's, and is worth trying again.
import { ProtocolError } from '../../errors.js';
import type { DatabaseHandle } from '../pool.js';
import type { ReadServer } from './standby-options.js';
import type { Standby, StandbyFault } from './standby-set.js';

/**
 * A standby cannot run this read for `role` (a role key; not a server fault): it goes to the
 * primary, whatever is configured, and so do that role's reads for a while (StandbySet.failed).
 */
export class StandbyUnsuitableError extends Error {
  constructor(
    message: string,
    readonly role: string,
  ) {
    super(message);
  }
}

const PRIMARY: ReadServer = { kind: 'primary', name: 'primary' };

/** The handle a read on a standby uses: the primary's, over the standby's pool, without pipelines. */
const standbyHandles = new WeakMap<Standby, DatabaseHandle>();

/**
 * Run `work` on the server that answers `db`'s reads: `db` itself when it has no standbys, else the
 * one its StandbySet picks (db/standby/standby-set.ts), told which it is. A standby's failure is
 * logged by the set and the read runs on the primary (or fails, as configured). `beforeStandby`
 * runs first when a standby was picked; its failure ends the read before anything ran.
 */
export async function onReadServer<T>(
  db: DatabaseHandle,
  work: (target: DatabaseHandle, server: ReadServer) => Promise<T>,
  options: {
    readonly beforeStandby?:
      ((server: ReadServer) => Promise<void>) | undefined;
    /** The role key the read runs as: a standby found unsuitable for it is skipped. */
    readonly role?: string;
  } = {},
): Promise<T> {
  const set = db.standbys;
  if (set === undefined) return work(db, PRIMARY);
  const standby = await set.pick(options.role);
  if (standby === undefined) return work(db, PRIMARY);
  const server: ReadServer = { kind: 'standby', name: standby.label };
  // Outside the fault handling below: its failure is the primary's, not the standby's.
  await options.beforeStandby?.(server);
  try {
    return await work(handleOf(db, standby), server);
  } catch (error) {
    const fault = standbyFault(error);
    if (fault === undefined) throw error;
    if (!set.failed(standby, fault))
      throw new ProtocolError(
        'UNAVAILABLE',
        'The standby could not answer; try again.',
        { cause: error },
      );
    return work(db, PRIMARY);
  }
}

function handleOf(db: DatabaseHandle, standby: Standby): DatabaseHandle {
  let handle = standbyHandles.get(standby);
  if (handle === undefined) {
    handle = {
      ...db,
      pool: standby.pool,
      pipelines: undefined,
      standbys: undefined,
    };
    standbyHandles.set(standby, handle);
  }
  return handle;
}

/**
 * Whether an error is the standby's rather than the statement's: the connection lost or refused
 * (UNAVAILABLE from a connection class), its pool full, or a query cancelled by a conflict with
 * recovery, which the primary does not have. A standby runs no serializable transaction and
 * nothing that writes, so every 40001 or 40P01 it sends is a recovery conflict, whatever language
 * its message is in.
 */
function standbyFault(error: unknown): StandbyFault | undefined {
  const unsuitable = error instanceof ProtocolError ? error.cause : error;
  if (unsuitable instanceof StandbyUnsuitableError)
    return {
      why: unsuitable.message,
      connectionLost: false,
      unsuitable: true,
      role: unsuitable.role,
    };
  const cause =
    error instanceof ProtocolError ? (error.cause ?? {}) : (error ?? {});
  const { code, message, sqlstate, routine, file, origin } = cause as {
    code?: unknown;
    message?: unknown;
    sqlstate?: unknown;
    routine?: unknown;
    file?: unknown;
    origin?: { readonly routine?: string; readonly file?: string };
  };
  const state =
    typeof code === 'string'
      ? code
      : typeof sqlstate === 'string'
        ? sqlstate
        : undefined;
  const why = `${state ?? 'no SQLSTATE'}: ${typeof message === 'string' ? message : 'no message'}`;
  if (state === '40001' || state === '40P01')
    return { why, connectionLost: false, unsuitable: false };
  if (
    refusedInRecovery(state, {
      routine: typeof routine === 'string' ? routine : origin?.routine,
      file: typeof file === 'string' ? file : origin?.file,
    })
  )
    return { why, connectionLost: false, unsuitable: true };
  if (!(error instanceof ProtocolError)) return undefined;
  if (error.key === 'POOL_EXHAUSTED')
    return { why, connectionLost: false, unsuitable: false };
  if (error.key !== 'UNAVAILABLE' || state === '55P03') return undefined;
  return { why, connectionLost: true, unsuitable: false };
}

/**
 * Whether a statement failed only because the server is in recovery, told by where PostgreSQL
 * raised it (its routine and file are never translated): NOTIFY and the other commands refused
 * during recovery (25006 from PreventCommandDuringRecovery), the WAL functions (55000 from
 * xlogfuncs.c, "recovery is in progress"), a transaction id asked for (XX000 from
 * GetNewTransactionId). The primary answers such a statement as it would without standbys; the
 * same SQLSTATEs raised elsewhere (a write in a read-only transaction, currval not yet defined)
 * are the statement's own and are answered from the standby. Nothing is remembered for the role,
 * as its next statement may be another.
 */
function refusedInRecovery(
  state: string | undefined,
  where: {
    readonly routine: string | undefined;
    readonly file: string | undefined;
  },
): boolean {
  if (state === '25006')
    return where.routine === 'PreventCommandDuringRecovery';
  if (state === '55000') return where.file === 'xlogfuncs.c';
  return state === 'XX000' && where.routine === 'GetNewTransactionId';
}
