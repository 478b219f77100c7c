// The identity provider's JWKS (jose's remote key set) plus a generation that moves whenever a fetch
// returns a different key set, so verified-token cache entries can be dropped when keys rotate.
import {
  createRemoteJWKSet,
  jwksCache,
  type CryptoKey,
  type FlattenedJWSInput,
  type JSONWebKeySet,
  type JWKSCacheInput,
  type JWSHeaderParameters,
} from 'jose';

export interface JwksKeySetOptions {
  readonly url: string;
  /** Least time between fetches caused by an unknown `kid`. */
  readonly cooldownMs: number;
  /** Age after which the next key lookup (or cache hit) refetches the set. */
  readonly maxAgeMs: number;
  /** Called once per observed change of the key set (not for the first fetch). */
  readonly onChange: () => void;
}

export interface JwksKeySet {
  /** jose's key lookup for `jwtVerify`; notes a refetched set before returning. */
  getKey(
    header: JWSHeaderParameters,
    token: FlattenedJWSInput,
  ): Promise<CryptoKey>;
  /** Counts observed changes of the key set: a token verified under an older one is not reused. */
  readonly generation: number;
  /**
   * Refetch the set when it is older than the max age, exactly when jose's own lookup would, so a
   * cache hit observes a removed key no later than a full verification would. Throws when the
   * fetch fails.
   */
  refreshIfStale(): Promise<void>;
}

/** Wrap jose's remote JWKS; its cache export (`jwks`) tells us when a fetch happened. */
export function createJwksKeySet(options: JwksKeySetOptions): JwksKeySet {
  const fetched: { uat?: number; jwks?: JSONWebKeySet } = {};
  const remote = createRemoteJWKSet(new URL(options.url), {
    cooldownDuration: options.cooldownMs,
    cacheMaxAge: options.maxAgeMs,
    [jwksCache]: fetched as JWKSCacheInput,
  });
  let seen: JSONWebKeySet | undefined;
  let fingerprint: string | undefined;
  let generation = 0;
  // Cheap when nothing was fetched (one comparison); a fetch compares the set's JSON text. jose
  // stores each fetch's parsed set as a new object: that, not the fetch's time (two fetches can
  // share a millisecond), tells that a fetch happened.
  function observe(): void {
    if (fetched.jwks === seen) return;
    seen = fetched.jwks;
    const next = JSON.stringify(fetched.jwks);
    if (next === fingerprint) return;
    const first = fingerprint === undefined;
    fingerprint = next;
    if (first) return;
    generation += 1;
    options.onChange();
  }
  return {
    async getKey(header, token) {
      try {
        return await remote(header, token);
      } finally {
        observe();
      }
    },
    get generation() {
      observe();
      return generation;
    },
    async refreshIfStale() {
      if (remote.fresh) return;
      try {
        await remote.reload();
      } finally {
        observe();
      }
    },
  };
}
