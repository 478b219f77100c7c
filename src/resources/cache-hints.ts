// ttlMs / cacheScope for every cacheable result (spec §5): one policy, so pages agree.
import type { Principal } from '../auth/index.js';
import type { Cacheable } from '../protocol/index.js';

/** Freshness per kind of answer, in ms. Lists change slower than bodies (a row edit is more common than an insert). */
export const TTL_MS = {
  discover: 300_000,
  list: 60_000,
  templates: 300_000,
  read: 10_000,
} as const;

/**
 * `private` whenever the answer depends on who asks (a request role is set); `public` only when
 * every caller sees the same thing (no authorization configured).
 */
export function cacheHints(
  kind: keyof typeof TTL_MS,
  principal: Principal,
): Cacheable {
  return {
    ttlMs: TTL_MS[kind],
    cacheScope: principal.role === null ? 'public' : 'private',
  };
}
