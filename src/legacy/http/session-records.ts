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

/** What the replica holding a session's GET stream reads of it (migration 0034). */
export interface LegacyStreamState {
  /** The newest stream's generation: a stream of an older one is no longer the session's. */
  readonly generation: bigint;
  readonly logLevel: string | null;
  /** Subscribed URIs as the client named them → normalized. */
  readonly subscriptions: ReadonlyMap<string, string>;
}

/** A session's subscriptions, kept with it for every replica (legacy-subscriptions.ts). */
export interface LegacySubscriptionRecords {
  /** 'full' when the session holds `max` other URIs; 'gone' when it is not live. */
  subscribe(
    id: string,
    principal: Principal,
    entry: { readonly uri: string; readonly key: string; readonly max: number },
  ): Promise<'subscribed' | 'full' | 'gone'>;
  /** False when the session is not live. */
  unsubscribe(id: string, principal: Principal, uri: string): Promise<boolean>;
}

/** The shared session store; every call checks the principal binding. */
export interface LegacySessionRecords extends LegacySubscriptionRecords {
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
  /** Claim the session's GET stream: its generation; undefined when the session is not live. */
  claimStream(id: string, principal: Principal): Promise<bigint | undefined>;
  /** The session as its stream's holder needs it; undefined when it is not live. */
  streamState(
    id: string,
    principal: Principal,
  ): Promise<LegacyStreamState | undefined>;
  /** How the store's channel names session `id` when it changes (a string payload). */
  eventKey(id: string): string;
}

export type SessionCheck = ReturnType<LegacySessionRecords['check']>;
