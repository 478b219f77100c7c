// A statement a transport needs run for a request (a 2025-11-25 session's check), sent first in the
// request's own round trip, as the login, before the identity statement. protocol/ carries it from
// the transport to the request; db/ runs it. A leaf, like errors.ts: it imports nothing.

/** The statement, the database it must run in, and where its rows go. */
export interface LeadingStatement {
  /** The database handle it must run in, compared by identity (a request may read others first). */
  readonly db: object;
  readonly name: string;
  readonly text: string;
  readonly values: unknown[];
  settle(rows: unknown[]): void;
}
