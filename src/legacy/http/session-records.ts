// What the 2025-11-25 HTTP sessions need of the shared session store (db/ client-sessions.ts,
// handed in by the composition root): every call checks the principal binding.
import type { Principal } from '../../auth/index.js';
import type { LeadingStatement } from '../../protocol/index.js';

/** A stored session: what initialize settled, as another replica reads it back. */
export interface LegacySessionRecord {
  readonly protocolVersion: string;
  readonly clientInfo: unknown;
  readonly clientCapabilities: unknown;
  readonly logLevel: string | null;
}

/** The shared session store; every call checks the principal binding. */
export interface LegacySessionRecords {
  open(
    id: string,
    principal: Principal,
    session: Omit<LegacySessionRecord, 'logLevel'>,
  ): Promise<boolean>;
  touch(
    id: string,
    principal: Principal,
  ): Promise<LegacySessionRecord | undefined>;
  /**
   * `touch` in the request's own transaction: `statement` goes first in its round trip, `result`
   * reads the session on its own only when the request ran no statement.
   */
  check(
    id: string,
    principal: Principal,
  ): {
    readonly statement: LeadingStatement;
    /** Whether the session is live (and this principal's); renewed when due. */
    result(): Promise<boolean>;
  };
  close(id: string, principal: Principal): Promise<boolean>;
}

export type SessionCheck = ReturnType<LegacySessionRecords['check']>;
