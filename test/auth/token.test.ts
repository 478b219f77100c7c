// Bearer-token verification: every way a token can be wrong, and JWKS key rotation.
import http from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  createTokenVerifier,
  isAllowedRoleName,
} from '../../src/auth/index.js';

const SECRET = 'a-test-secret-that-is-long-enough-0123456789';
const AUDIENCE = 'http://127.0.0.1:3000/mcp';
const ISSUER = 'https://id.example.com/';
const key = new TextEncoder().encode(SECRET);

const verifier = createTokenVerifier({
  secret: SECRET,
  audience: AUDIENCE,
  issuer: ISSUER,
  roleClaim: 'role',
});

function hs256(
  claims: Record<string, unknown>,
  options: {
    exp?: string | number;
    nbf?: string | number;
    aud?: string;
    iss?: string;
  } = {},
): Promise<string> {
  let jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuedAt()
    .setAudience(options.aud ?? AUDIENCE)
    .setIssuer(options.iss ?? ISSUER)
    .setExpirationTime(options.exp ?? '1h');
  if (options.nbf !== undefined) jwt = jwt.setNotBefore(options.nbf);
  return jwt.sign(key);
}

async function reason(authorization: string | undefined): Promise<string> {
  try {
    await verifier.verify(authorization);
  } catch (error) {
    expect(error).toBeInstanceOf(AuthenticationError);
    return (error as AuthenticationError).reason;
  }
  return 'ACCEPTED';
}

describe('bearer tokens (HS256)', () => {
  it('accepts a valid token and exposes its role and every claim', async () => {
    const principal = await verifier.verify(
      `Bearer ${await hs256({ role: 'support', tenant: 't1' })}`,
    );
    expect(principal.role).toBe('support');
    expect(principal.claims).toMatchObject({
      role: 'support',
      tenant: 't1',
      aud: AUDIENCE,
      iss: ISSUER,
    });
  });

  it.each([
    [
      'expired',
      () =>
        hs256({ role: 'support' }, { exp: Math.floor(Date.now() / 1000) - 60 }),
      'EXPIRED_TOKEN',
    ],
    [
      'not yet valid',
      () =>
        hs256(
          { role: 'support' },
          { nbf: Math.floor(Date.now() / 1000) + 600 },
        ),
      'INVALID_TOKEN',
    ],
    [
      'for another audience',
      () =>
        hs256({ role: 'support' }, { aud: 'https://other.example.com/mcp' }),
      'INVALID_TOKEN',
    ],
    [
      'from another issuer',
      () => hs256({ role: 'support' }, { iss: 'https://evil.example.com/' }),
      'INVALID_TOKEN',
    ],
    [
      'signed with another secret',
      () =>
        new SignJWT({ role: 'support' })
          .setProtectedHeader({ alg: 'HS256' })
          .setAudience(AUDIENCE)
          .setIssuer(ISSUER)
          .setExpirationTime('1h')
          .sign(new TextEncoder().encode('x'.repeat(40))),
      'INVALID_TOKEN',
    ],
    [
      'without exp',
      () =>
        new SignJWT({ role: 'support' })
          .setProtectedHeader({ alg: 'HS256' })
          .setAudience(AUDIENCE)
          .setIssuer(ISSUER)
          .sign(key),
      'INVALID_TOKEN',
    ],
  ])('refuses a token %s', async (_label, make, expected) => {
    expect(await reason(`Bearer ${await make()}`)).toBe(expected);
  });

  it('refuses alg "none" and an HS256 token re-signed as another algorithm', async () => {
    const body = Buffer.from(
      JSON.stringify({
        role: 'admin',
        aud: AUDIENCE,
        iss: ISSUER,
        exp: Math.floor(Date.now() / 1000) + 3600,
      }),
    ).toString('base64url');
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${body}.`;
    expect(await reason(`Bearer ${none}`)).not.toBe('ACCEPTED');
    const good = await hs256({ role: 'admin' });
    const [, payload, signature] = good.split('.');
    const confused = `${Buffer.from(JSON.stringify({ alg: 'RS256' })).toString('base64url')}.${payload}.${signature}`;
    expect(await reason(`Bearer ${confused}`)).toBe('INVALID_TOKEN');
  });

  it('refuses missing, malformed and oversized credentials', async () => {
    expect(await reason(undefined)).toBe('MISSING_TOKEN');
    expect(await reason('')).toBe('MISSING_TOKEN');
    expect(await reason('Basic dXNlcjpwYXNz')).toBe('MALFORMED_TOKEN');
    expect(await reason('Bearer not-a-jwt')).toBe('MALFORMED_TOKEN');
    expect(await reason('Bearer a.b.c')).toBe('MALFORMED_TOKEN');
    expect(await reason(`Bearer ${'a'.repeat(9000)}.${'b'.repeat(10)}.c`)).toBe(
      'MALFORMED_TOKEN',
    );
  });

  it('refuses roles a token must not name: none, pg_ roles, control characters, missing', async () => {
    for (const role of [
      'none',
      'NONE',
      'pg_read_all_data',
      'a\u0000b',
      '',
      'x'.repeat(64),
    ]) {
      expect(await reason(`Bearer ${await hs256({ role })}`), role).toBe(
        'ROLE_FORBIDDEN',
      );
    }
    expect(await reason(`Bearer ${await hs256({})}`)).toBe('ROLE_FORBIDDEN');
    expect(isAllowedRoleName('Support Team ünicode')).toBe(true);
  });

  it('uses the configured anonymous role only when configured', async () => {
    const anonymous = createTokenVerifier({
      secret: SECRET,
      audience: AUDIENCE,
      roleClaim: 'role',
      anonymousRole: 'web_anon',
    });
    expect(await anonymous.verify(undefined)).toEqual({
      role: 'web_anon',
      claims: {},
    });
  });
});

describe('bearer tokens from a JWKS (RS256/ES256) with key rotation', () => {
  let server: http.Server;
  let jwksUrl: string;
  let published: JWK[] = [];

  beforeAll(async () => {
    server = http.createServer((_request, response) => {
      response.writeHead(200, { 'Content-Type': 'application/json' });
      response.end(JSON.stringify({ keys: published }));
    });
    await new Promise<void>((resolve) =>
      server.listen(0, '127.0.0.1', resolve),
    );
    jwksUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/jwks.json`;
  });

  afterAll(() => {
    server.close();
  });

  it('verifies with the published key and picks up a rotated key by kid', async () => {
    const first = await generateKeyPair('RS256');
    const second = await generateKeyPair('ES256');
    published = [
      {
        ...(await exportJWK(first.publicKey)),
        kid: 'k1',
        alg: 'RS256',
        use: 'sig',
      },
    ];
    const jwks = createTokenVerifier({
      jwksUrl,
      audience: AUDIENCE,
      roleClaim: 'role',
      jwksCooldownMs: 0,
    });
    const sign = (
      privateKey: Parameters<SignJWT['sign']>[0],
      alg: string,
      kid: string,
    ) =>
      new SignJWT({ role: 'engineering' })
        .setProtectedHeader({ alg, kid })
        .setAudience(AUDIENCE)
        .setExpirationTime('1h')
        .sign(privateKey);

    expect(
      (
        await jwks.verify(
          `Bearer ${await sign(first.privateKey, 'RS256', 'k1')}`,
        )
      ).role,
    ).toBe('engineering');
    // A token from the next key fails until the provider publishes it, then works without a restart.
    const rotatedToken = await sign(second.privateKey, 'ES256', 'k2');
    await expect(jwks.verify(`Bearer ${rotatedToken}`)).rejects.toMatchObject({
      reason: 'INVALID_TOKEN',
    });
    published = [
      {
        ...(await exportJWK(second.publicKey)),
        kid: 'k2',
        alg: 'ES256',
        use: 'sig',
      },
    ];
    expect((await jwks.verify(`Bearer ${rotatedToken}`)).role).toBe(
      'engineering',
    );
    // HS256 is not accepted by a JWKS-only verifier (no algorithm confusion).
    const hs = await new SignJWT({ role: 'engineering' })
      .setProtectedHeader({ alg: 'HS256' })
      .setAudience(AUDIENCE)
      .setExpirationTime('1h')
      .sign(key);
    await expect(jwks.verify(`Bearer ${hs}`)).rejects.toMatchObject({
      reason: 'INVALID_TOKEN',
    });
  });

  it('reports an unreachable JWKS as KEYS_UNAVAILABLE (the caller is not at fault)', async () => {
    const unreachable = createTokenVerifier({
      jwksUrl: 'http://127.0.0.1:1/jwks.json',
      audience: AUDIENCE,
      roleClaim: 'role',
    });
    const pair = await generateKeyPair('RS256');
    const signed = await new SignJWT({ role: 'engineering' })
      .setProtectedHeader({ alg: 'RS256', kid: 'k9' })
      .setAudience(AUDIENCE)
      .setExpirationTime('1h')
      .sign(pair.privateKey);
    await expect(unreachable.verify(`Bearer ${signed}`)).rejects.toMatchObject({
      reason: 'KEYS_UNAVAILABLE',
    });
  });
});
