// Bearer tokens → Principal: JWTs verified with jose, HS256 with a shared secret and/or RS/ES/EdDSA
// keys from a company identity provider's JWKS. Pure: no database, no transport.
import { createHash, randomUUID } from 'node:crypto';
import {
  errors as joseErrors,
  jwtVerify,
  SignJWT,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import { createJwksKeySet, type JwksKeySet } from './jwks-key-set.js';
import type { Principal } from './principal.js';
import { claimedScopes } from './scope-policy.js';
import { createTokenCache } from './token-cache.js';

const ASYMMETRIC_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
];

export interface TokenVerifierOptions {
  /** HS256 shared secret (at least 32 bytes). */
  readonly secret?: string | undefined;
  /** JWKS URL of the identity provider; keys are cached and refetched on an unknown `kid`. */
  readonly jwksUrl?: string | undefined;
  /** Required `iss`, when set. */
  readonly issuer?: string | undefined;
  /** Required `aud`: this server's resource URL (RFC 8707). */
  readonly audience: string;
  /** Claim holding the Postgres role (a top-level claim name). */
  readonly roleClaim: string;
  /** Role for requests without a token; undefined refuses them. */
  readonly anonymousRole?: string | undefined;
  /** Largest accepted token, in bytes. */
  readonly maxTokenBytes?: number | undefined;
  /** JWKS refetch cooldown in ms (tests shorten it). */
  readonly jwksCooldownMs?: number | undefined;
  /** Age in ms after which the JWKS is refetched on the next request (default 10 minutes). */
  readonly jwksMaxAgeMs?: number | undefined;
  /** Most verified tokens kept (default 1000); 0 turns the cache off. */
  readonly cacheMaxEntries?: number | undefined;
  /** Longest a verified token is reused before it is checked again (default 300); 0: off. */
  readonly cacheMaxLifetimeSeconds?: number | undefined;
  /** The clock, epoch ms (tests inject one). */
  readonly now?: (() => number) | undefined;
  /** Called for every key lookup, i.e. every full signature check (a cache miss). */
  readonly onKeyLookup?: (() => void) | undefined;
}

/** Why a request could not be authenticated; the transport answers 401 (or 403 for ROLE_FORBIDDEN). */
export class AuthenticationError extends Error {
  constructor(
    readonly reason:
      | 'MISSING_TOKEN'
      | 'MALFORMED_TOKEN'
      | 'INVALID_TOKEN'
      | 'EXPIRED_TOKEN'
      | 'ROLE_FORBIDDEN'
      | 'KEYS_UNAVAILABLE',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'AuthenticationError';
  }
}

export interface TokenVerifier {
  /**
   * The principal for an `Authorization` header value (or its absence). A token verified before is
   * answered from a bounded cache until its `exp` (or the cache's max lifetime) passes or, for a
   * JWKS key, until the key set is seen to change; failures are never cached.
   */
  verify(authorization: string | undefined): Promise<Principal>;
  /** How many verified tokens the cache holds (at most `cacheMaxEntries`). */
  readonly cachedTokens: number;
}

/**
 * A role name a token may name: 1–63 bytes, printable, not "none" (which would reset to the login
 * role) and not a predefined `pg_` role. It is passed as a parameter, never spliced into SQL.
 */
export function isAllowedRoleName(role: string): boolean {
  return (
    role.length > 0 &&
    Buffer.byteLength(role) <= 63 &&
    /^[^\u0000-\u001f\u007f]+$/u.test(role) &&
    role.toLowerCase() !== 'none' &&
    !role.toLowerCase().startsWith('pg_')
  );
}

/** Build the verifier; throws at start-up when neither a secret nor a JWKS URL is given. */
export function createTokenVerifier(
  options: TokenVerifierOptions,
): TokenVerifier {
  checkKeyOptions(options);
  const now = options.now ?? Date.now;
  const cache = createTokenCache({
    maxEntries: options.cacheMaxEntries ?? 1000,
    maxLifetimeMs: (options.cacheMaxLifetimeSeconds ?? 300) * 1000,
    now,
  });
  const keySet = jwksKeySet(options, () => cache?.dropJwksEntries());
  const checkSignature = createSignatureCheck(options, keySet, now);

  // A cached principal is reused only while its JWKS generation is current; a stale set is
  // refetched first, exactly when a full verification would refetch it.
  async function cached(key: string): Promise<Principal | undefined> {
    const hit = cache?.get(key);
    if (hit === undefined || hit.jwksGeneration === undefined)
      return hit?.principal;
    if (keySet === undefined) return undefined;
    try {
      await keySet.refreshIfStale();
    } catch (error) {
      throw toAuthenticationError(error);
    }
    return hit.jwksGeneration === keySet.generation ? hit.principal : undefined;
  }

  return {
    async verify(authorization) {
      const token = bearerToken(authorization, options.maxTokenBytes ?? 8192);
      if (token === undefined) {
        if (options.anonymousRole !== undefined)
          return { role: options.anonymousRole, claims: {}, scopes: [] };
        throw new AuthenticationError(
          'MISSING_TOKEN',
          'A bearer token is required.',
        );
      }
      const key = cache?.keyOf(token);
      const hit = key === undefined ? undefined : await cached(key);
      if (hit !== undefined) return hit;
      const generation = keySet?.generation;
      const { payload, viaJwks } = await checkSignature(token);
      const principal = principalOf(payload, options.roleClaim, token);
      // A key set that changed while this token was checked may not hold its key: not reused.
      if (
        key !== undefined &&
        payload.exp !== undefined &&
        keySet?.generation === generation
      )
        cache?.set(key, {
          principal,
          exp: payload.exp,
          nbf: payload.nbf,
          jwksGeneration: viaJwks ? generation : undefined,
        });
      return principal;
    },
    get cachedTokens() {
      return cache?.size ?? 0;
    },
  };
}

/** A verifier needs a key: a secret long enough for HS256, or a JWKS URL. */
function checkKeyOptions(options: TokenVerifierOptions): void {
  if (options.secret === undefined && options.jwksUrl === undefined) {
    throw new Error('token verification needs a secret or a JWKS URL');
  }
  if (options.secret !== undefined && Buffer.byteLength(options.secret) < 32) {
    throw new Error('the JWT secret must be at least 32 bytes');
  }
}

/** The identity provider's key set, when a JWKS URL is given; `onChange` when its keys change. */
function jwksKeySet(
  options: TokenVerifierOptions,
  onChange: () => void,
): ReturnType<typeof createJwksKeySet> | undefined {
  return options.jwksUrl === undefined
    ? undefined
    : createJwksKeySet({
        url: options.jwksUrl,
        cooldownMs: options.jwksCooldownMs ?? 30_000,
        maxAgeMs: options.jwksMaxAgeMs ?? 600_000,
        onChange,
      });
}

/** The JWT of an `Authorization` header; undefined when there is none. */
function bearerToken(
  authorization: string | undefined,
  maxTokenBytes: number,
): string | undefined {
  if (authorization === undefined || authorization === '') return undefined;
  const match =
    /^Bearer ([A-Za-z0-9\-_]+\.[A-Za-z0-9\-_]*\.[A-Za-z0-9\-_]*)$/i.exec(
      authorization,
    );
  if (match === null)
    throw new AuthenticationError(
      'MALFORMED_TOKEN',
      'Send the token as "Authorization: Bearer <JWT>".',
    );
  const token = match[1] as string;
  if (token.length > maxTokenBytes)
    throw new AuthenticationError('MALFORMED_TOKEN', 'The token is too large.');
  return token;
}

/**
 * Verified claims → Principal, frozen: a cached one is shared by every request with the token. The
 * token's digest identifies a caller whose token has no `sub` (principalIdentity).
 */
function principalOf(
  payload: JWTPayload,
  roleClaim: string,
  token: string,
): Principal {
  const role = payload[roleClaim];
  if (typeof role !== 'string' || !isAllowedRoleName(role)) {
    throw new AuthenticationError(
      'ROLE_FORBIDDEN',
      'The token does not name a role this server may assume.',
    );
  }
  return Object.freeze({
    role,
    claims: Object.freeze(payload),
    scopes: Object.freeze(claimedScopes(payload)),
    tokenDigest: createHash('sha256').update(token).digest('base64url'),
  });
}

/** The full check of one token: signature, algorithm, `exp`, `nbf`, `aud` and `iss`. */
function createSignatureCheck(
  options: TokenVerifierOptions,
  keySet: JwksKeySet | undefined,
  now: () => number,
): (token: string) => Promise<{ payload: JWTPayload; viaJwks: boolean }> {
  const secretKey =
    options.secret === undefined
      ? undefined
      : new TextEncoder().encode(options.secret);
  // Each key source only verifies its own algorithm family: no HS/RS confusion, and `none` never.
  const algorithms = [
    ...(secretKey === undefined ? [] : ['HS256']),
    ...(keySet === undefined ? [] : ASYMMETRIC_ALGORITHMS),
  ];
  const getKey: JWTVerifyGetKey = async (header, token) => {
    options.onKeyLookup?.();
    if (header.alg === 'HS256' && secretKey !== undefined) return secretKey;
    if (
      keySet !== undefined &&
      header.alg !== undefined &&
      ASYMMETRIC_ALGORITHMS.includes(header.alg)
    )
      return keySet.getKey(header, token);
    throw new AuthenticationError(
      'INVALID_TOKEN',
      'The token is signed with an algorithm this server does not accept.',
    );
  };
  return async function checkSignature(token) {
    try {
      const { payload, protectedHeader } = await jwtVerify(token, getKey, {
        algorithms,
        audience: options.audience,
        ...(options.issuer === undefined ? {} : { issuer: options.issuer }),
        requiredClaims: ['exp'],
        clockTolerance: 5,
        currentDate: new Date(now()),
      });
      return { payload, viaJwks: protectedHeader.alg !== 'HS256' };
    } catch (error) {
      throw toAuthenticationError(error);
    }
  };
}

/** jose's failures → the reasons the transport answers with. */
function toAuthenticationError(error: unknown): AuthenticationError {
  if (error instanceof AuthenticationError) return error;
  if (error instanceof joseErrors.JWTExpired)
    return new AuthenticationError('EXPIRED_TOKEN', 'The token has expired.', {
      cause: error,
    });
  // The identity provider's keys could not be fetched or used: the caller is not at fault. jose
  // reports a non-200 or non-JSON JWKS response as a bare JOSEError.
  if (
    error instanceof joseErrors.JWKSTimeout ||
    error instanceof joseErrors.JWKSInvalid ||
    (error instanceof Error && !(error instanceof joseErrors.JOSEError)) ||
    (error instanceof joseErrors.JOSEError &&
      error.code === joseErrors.JOSEError.code)
  )
    return new AuthenticationError(
      'KEYS_UNAVAILABLE',
      'The signing keys could not be fetched.',
      { cause: error },
    );
  if (
    error instanceof joseErrors.JWSInvalid ||
    error instanceof joseErrors.JWTInvalid
  )
    return new AuthenticationError(
      'MALFORMED_TOKEN',
      'The token is malformed.',
      {
        cause: error,
      },
    );
  return new AuthenticationError(
    'INVALID_TOKEN',
    'The token is not valid for this server.',
    { cause: error },
  );
}

/** A development token signed with the HS256 secret (`pgmcp token`). */
export async function mintToken(options: {
  readonly secret: string;
  readonly role: string;
  readonly claims: Readonly<Record<string, string>>;
  readonly audience: string;
  readonly issuer: string;
  readonly ttlSeconds: number;
}): Promise<string> {
  if (!isAllowedRoleName(options.role))
    throw new Error(`"${options.role}" is not a role name a token may carry`);
  // A jti of its own unless one is given: a token without `sub` is then one caller, not a role.
  return new SignJWT({
    jti: randomUUID(),
    ...options.claims,
    role: options.role,
  })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt()
    .setIssuer(options.issuer)
    .setAudience(options.audience)
    .setExpirationTime(Math.floor(Date.now() / 1000) + options.ttlSeconds)
    .sign(new TextEncoder().encode(options.secret));
}
