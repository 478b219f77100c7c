// A bounded LRU of verified bearer tokens, so a signature is checked once per token, not once per
// request. Keyed by a SHA-256 digest of the token: the token itself is never kept.
import { METRICS } from '../observability/index.js';
import { hash } from 'node:crypto';
import type { Principal } from './principal.js';

/** A verified token's outcome and the window in which it may be reused without re-verifying. */
export interface CachedToken {
  readonly principal: Principal;
  /** Epoch ms before which the entry is not used (the token's `nbf`). */
  readonly validFrom: number;
  /** Epoch ms from which the entry is gone: min(`exp`, verification time + max lifetime). */
  readonly expiresAt: number;
  /** The JWKS generation whose key verified it; undefined: the HS256 secret did. */
  readonly jwksGeneration: number | undefined;
}

/** What `set` needs: the principal, the token's `exp`/`nbf` (seconds) and the key's generation. */
export interface NewCachedToken {
  readonly principal: Principal;
  readonly exp: number;
  readonly nbf: number | undefined;
  readonly jwksGeneration: number | undefined;
}

export interface TokenCacheOptions {
  /** Most entries kept; the least recently used goes first. */
  readonly maxEntries: number;
  /** Longest an entry lives, whatever the token's `exp`. */
  readonly maxLifetimeMs: number;
  /** Epoch ms (tests inject a clock). */
  readonly now: () => number;
}

export interface TokenCache {
  /** The digest a token is stored under. */
  keyOf(token: string): string;
  /** The entry for a digest when it is valid now; an expired one is removed. */
  get(key: string): CachedToken | undefined;
  /** Store a token verified just now, evicting the least recently used one past the bound. */
  set(key: string, entry: NewCachedToken): void;
  /** Drop every entry verified with a JWKS key (the key set changed). */
  dropJwksEntries(): void;
  readonly size: number;
}

/** Build a cache; `undefined` when either bound is 0 (caching off). */
export function createTokenCache(
  options: TokenCacheOptions,
): TokenCache | undefined {
  if (options.maxEntries === 0 || options.maxLifetimeMs === 0) return undefined;
  // Map iteration order is insertion order: re-inserting on a hit makes the first key the LRU one.
  const entries = new Map<string, CachedToken>();
  return {
    // Collision resistance is what matters (a collision would hand one token another's principal);
    // SHA-256 gives it for a small fraction of a signature check. The digest never leaves the process.
    keyOf: (token) => hash('sha256', token, 'base64'),
    get(key) {
      const entry = entries.get(key);
      const now = options.now();
      if (entry !== undefined && now >= entry.expiresAt) entries.delete(key);
      if (
        entry === undefined ||
        now >= entry.expiresAt ||
        now < entry.validFrom
      ) {
        METRICS.cacheLookups.inc({ cache: 'token', result: 'miss' });
        return undefined;
      }
      METRICS.cacheLookups.inc({ cache: 'token', result: 'hit' });
      entries.delete(key);
      entries.set(key, entry);
      return entry;
    },
    set(key, { principal, exp, nbf, jwksGeneration }) {
      const now = options.now();
      const expiresAt = Math.min(exp * 1000, now + options.maxLifetimeMs);
      if (expiresAt <= now) return;
      entries.delete(key);
      entries.set(key, {
        principal,
        validFrom: nbf === undefined ? 0 : nbf * 1000,
        expiresAt,
        jwksGeneration,
      });
      if (entries.size > options.maxEntries) {
        const oldest = entries.keys().next();
        if (oldest.done !== true) entries.delete(oldest.value);
      }
    },
    dropJwksEntries() {
      for (const [key, entry] of entries)
        if (entry.jwksGeneration !== undefined) entries.delete(key);
    },
    get size() {
      return entries.size;
    },
  };
}
