// How a client session is named in pgmcp.legacy_sessions: digests of its id and of its caller,
// never the id itself (client-sessions.ts makes them).

/** A session's keys (both SHA-256 digests). */
export interface ClientSessionKeys {
  readonly idHash: Buffer;
  readonly principalHash: Buffer;
}
