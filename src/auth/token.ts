// Bearer tokens → Principal: JWTs verified with jose, HS256 with a shared secret and/or RS/ES/EdDSA
// keys from a company identity provider's JWKS. Pure: no database, no transport.
import {
  createRemoteJWKSet,
  errors as joseErrors,
  jwtVerify,
  SignJWT,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import type { Principal } from './principal.js';

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
  /** The principal for an `Authorization` header value (or its absence). */
  verify(authorization: string | undefined): Promise<Principal>;
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
  if (options.secret === undefined && options.jwksUrl === undefined) {
    throw new Error('token verification needs a secret or a JWKS URL');
  }
  if (options.secret !== undefined && Buffer.byteLength(options.secret) < 32) {
    throw new Error('the JWT secret must be at least 32 bytes');
  }
  const maxTokenBytes = options.maxTokenBytes ?? 8192;
  const secretKey =
    options.secret === undefined
      ? undefined
      : new TextEncoder().encode(options.secret);
  const jwks =
    options.jwksUrl === undefined
      ? undefined
      : createRemoteJWKSet(new URL(options.jwksUrl), {
          cooldownDuration: options.jwksCooldownMs ?? 30_000,
        });
  // Each key source only verifies its own algorithm family: no HS/RS confusion, and `none` never.
  const algorithms = [
    ...(secretKey === undefined ? [] : ['HS256']),
    ...(jwks === undefined ? [] : ASYMMETRIC_ALGORITHMS),
  ];
  const getKey: JWTVerifyGetKey = async (header, token) => {
    if (header.alg === 'HS256' && secretKey !== undefined) return secretKey;
    if (
      jwks !== undefined &&
      header.alg !== undefined &&
      ASYMMETRIC_ALGORITHMS.includes(header.alg)
    )
      return jwks(header, token);
    throw new AuthenticationError(
      'INVALID_TOKEN',
      'The token is signed with an algorithm this server does not accept.',
    );
  };

  async function verifyToken(token: string): Promise<JWTPayload> {
    try {
      const { payload } = await jwtVerify(token, getKey, {
        algorithms,
        audience: options.audience,
        ...(options.issuer === undefined ? {} : { issuer: options.issuer }),
        requiredClaims: ['exp'],
        clockTolerance: 5,
      });
      return payload;
    } catch (error) {
      if (error instanceof AuthenticationError) throw error;
      if (error instanceof joseErrors.JWTExpired)
        throw new AuthenticationError(
          'EXPIRED_TOKEN',
          'The token has expired.',
          { cause: error },
        );
      // The identity provider's keys could not be fetched: the caller is not at fault.
      if (
        error instanceof joseErrors.JWKSTimeout ||
        (error instanceof Error && !(error instanceof joseErrors.JOSEError))
      ) {
        throw new AuthenticationError(
          'KEYS_UNAVAILABLE',
          'The signing keys could not be fetched.',
          { cause: error },
        );
      }
      if (
        error instanceof joseErrors.JWSInvalid ||
        error instanceof joseErrors.JWTInvalid
      ) {
        throw new AuthenticationError(
          'MALFORMED_TOKEN',
          'The token is malformed.',
          { cause: error },
        );
      }
      throw new AuthenticationError(
        'INVALID_TOKEN',
        'The token is not valid for this server.',
        { cause: error },
      );
    }
  }

  return {
    async verify(authorization) {
      if (authorization === undefined || authorization === '') {
        if (options.anonymousRole !== undefined)
          return { role: options.anonymousRole, claims: {} };
        throw new AuthenticationError(
          'MISSING_TOKEN',
          'A bearer token is required.',
        );
      }
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
        throw new AuthenticationError(
          'MALFORMED_TOKEN',
          'The token is too large.',
        );
      const claims = await verifyToken(token);
      const role = claims[options.roleClaim];
      if (typeof role !== 'string' || !isAllowedRoleName(role)) {
        throw new AuthenticationError(
          'ROLE_FORBIDDEN',
          'The token does not name a role this server may assume.',
        );
      }
      return { role, claims };
    },
  };
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
  return new SignJWT({ ...options.claims, role: options.role })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt()
    .setIssuer(options.issuer)
    .setAudience(options.audience)
    .setExpirationTime(Math.floor(Date.now() / 1000) + options.ttlSeconds)
    .sign(new TextEncoder().encode(options.secret));
}
