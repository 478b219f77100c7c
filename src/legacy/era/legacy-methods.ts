// The 2025-11-25 method table (legacy digest §11): every method a session may call, and what
// serves it. The 2026-07-28 table is the composition root's (app/method-table.ts); this era adds
// the session's own methods and shares the rest of its handlers.

/** How one 2025-11-25 method is served. */
export interface LegacyRoute {
  /**
   * `session`: by the adapter, from the session's state (legacy-adapter.ts); `shared`: by the
   * 2026-07-28 handler of the same name, its answer reshaped (legacy-codec.ts).
   */
  readonly by: 'session' | 'shared';
  /**
   * A read-only shared method whose HTTP session check may ride in the request's own transaction
   * (legacy-http.ts): a session that turns out to be gone has changed nothing when it is refused.
   */
  readonly checkedInRequest: boolean;
}

const SESSION: LegacyRoute = { by: 'session', checkedInRequest: false };
const SHARED: LegacyRoute = { by: 'shared', checkedInRequest: false };
const SHARED_READ: LegacyRoute = { by: 'shared', checkedInRequest: true };

/** method → how it is served. */
export const LEGACY_METHODS: ReadonlyMap<string, LegacyRoute> = new Map([
  ['initialize', SESSION],
  ['ping', SESSION],
  ['resources/subscribe', SESSION],
  ['resources/unsubscribe', SESSION],
  ['logging/setLevel', SESSION],
  ['resources/list', SHARED_READ],
  ['resources/templates/list', SHARED_READ],
  ['resources/read', SHARED_READ],
  ['completion/complete', SHARED_READ],
  ['prompts/list', SHARED_READ],
  ['prompts/get', SHARED_READ],
  ['tools/list', SHARED],
  ['tools/call', SHARED],
]);
