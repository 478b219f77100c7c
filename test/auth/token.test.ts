// Bearer-token verification: every way a token can be wrong, JWKS key rotation, and the cache of
// verified tokens (expiry, max lifetime, bound, rotation).
import http from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
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
    // Without a token it holds no scope: a scope map limits it (issue 32 point 11).
    expect(await anonymous.verify(undefined)).toEqual({
      role: 'web_anon',
      claims: {},
      scopes: [],
    });
  });
});

describe('verified-token cache', () => {
  const seconds = (ms: number) => Math.floor(ms / 1000);
  let clock = Date.now();
  const cachingVerifier = (
    extra: { cacheMaxEntries?: number; cacheMaxLifetimeSeconds?: number } = {},
  ) => {
    const onKeyLookup = vi.fn();
    const tokens = createTokenVerifier({
      secret: SECRET,
      audience: AUDIENCE,
      issuer: ISSUER,
      roleClaim: 'role',
      now: () => clock,
      onKeyLookup,
      ...extra,
    });
    return { tokens, onKeyLookup };
  };

  it('answers a repeated token with an equal principal and no second signature check; per verifier', async () => {
    clock = Date.now();
    const { tokens, onKeyLookup } = cachingVerifier();
    const bearer = `Bearer ${await hs256({ role: 'support', tenant: 't1' })}`;
    const first = await tokens.verify(bearer);
    const second = await tokens.verify(bearer);
    expect(second).toEqual(first);
    expect(second.role).toBe('support');
    expect(onKeyLookup).toHaveBeenCalledTimes(1);
    expect(tokens.cachedTokens).toBe(1);
    await tokens.verify(`Bearer ${await hs256({ role: 'finance' })}`);
    expect(onKeyLookup).toHaveBeenCalledTimes(2);
    // Another verifier shares nothing with this one.
    const other = cachingVerifier();
    expect(other.tokens.cachedTokens).toBe(0);
    await other.tokens.verify(bearer);
    expect(other.onKeyLookup).toHaveBeenCalledTimes(1);
  });

  it('refuses a cached token once its exp passes, whatever the cache holds', async () => {
    clock = Date.now();
    const { tokens, onKeyLookup } = cachingVerifier();
    const exp = seconds(clock) + 60;
    const bearer = `Bearer ${await hs256({ role: 'support' }, { exp })}`;
    await tokens.verify(bearer);
    clock += 30_000;
    await tokens.verify(bearer);
    expect(onKeyLookup).toHaveBeenCalledTimes(1);
    clock = exp * 1000 + 10_000;
    await expect(tokens.verify(bearer)).rejects.toMatchObject({
      reason: 'EXPIRED_TOKEN',
    });
    expect(onKeyLookup).toHaveBeenCalledTimes(2);
    expect(tokens.cachedTokens).toBe(0);
  });

  it('checks a token again after the max lifetime, though its exp is later', async () => {
    clock = Date.now();
    const { tokens, onKeyLookup } = cachingVerifier({
      cacheMaxLifetimeSeconds: 60,
    });
    const bearer = `Bearer ${await hs256({ role: 'support' }, { exp: '1h' })}`;
    await tokens.verify(bearer);
    clock += 59_000;
    await tokens.verify(bearer);
    expect(onKeyLookup).toHaveBeenCalledTimes(1);
    clock += 2_000;
    expect((await tokens.verify(bearer)).role).toBe('support');
    expect(onKeyLookup).toHaveBeenCalledTimes(2);
  });

  it('does not answer from the cache before the nbf of a token', async () => {
    clock = Date.now();
    const { tokens } = cachingVerifier();
    const nbf = seconds(clock) + 600;
    const bearer = `Bearer ${await hs256({ role: 'support' }, { nbf })}`;
    clock = nbf * 1000 + 1000;
    await tokens.verify(bearer);
    expect(tokens.cachedTokens).toBe(1);
    // A clock set back (NTP, a VM resumed) must not make the cache answer for a not-yet-valid token.
    clock = nbf * 1000 - 60_000;
    await expect(tokens.verify(bearer)).rejects.toMatchObject({
      reason: 'INVALID_TOKEN',
    });
  });

  it('never caches a refused token', async () => {
    clock = Date.now();
    const { tokens, onKeyLookup } = cachingVerifier();
    const refused = [
      `Bearer ${await hs256({ role: 'pg_read_all_data' })}`,
      `Bearer ${await hs256({ role: 'support' }, { exp: seconds(clock) - 60 })}`,
      `Bearer ${await hs256({ role: 'support' }, { aud: 'https://other.example.com/mcp' })}`,
    ];
    for (const bearer of [...refused, ...refused])
      await expect(tokens.verify(bearer)).rejects.toBeInstanceOf(
        AuthenticationError,
      );
    expect(onKeyLookup).toHaveBeenCalledTimes(6);
    expect(tokens.cachedTokens).toBe(0);
  });

  it('holds at most cacheMaxEntries tokens, dropping the least recently used', async () => {
    clock = Date.now();
    const { tokens, onKeyLookup } = cachingVerifier({ cacheMaxEntries: 50 });
    const bearers = await Promise.all(
      Array.from(
        { length: 200 },
        async (_, n) => `Bearer ${await hs256({ role: 'support', n })}`,
      ),
    );
    const at = (n: number) => bearers[n] as string;
    for (let n = 0; n < 50; n += 1) await tokens.verify(at(n));
    await tokens.verify(at(0)); // 0 becomes the most recently used; 1 is now the oldest
    await tokens.verify(at(50));
    expect(tokens.cachedTokens).toBe(50);
    onKeyLookup.mockClear();
    await tokens.verify(at(0));
    expect(onKeyLookup).toHaveBeenCalledTimes(0);
    await tokens.verify(at(1));
    expect(onKeyLookup).toHaveBeenCalledTimes(1);
    let largest = 0;
    for (const bearer of bearers.slice(51)) {
      await tokens.verify(bearer);
      largest = Math.max(largest, tokens.cachedTokens);
    }
    expect(largest).toBe(50);
    // The newest 50 are all answered from the cache.
    onKeyLookup.mockClear();
    for (const bearer of bearers.slice(150)) await tokens.verify(bearer);
    expect(onKeyLookup).toHaveBeenCalledTimes(0);
  });

  it.each([{ cacheMaxEntries: 0 }, { cacheMaxLifetimeSeconds: 0 }])(
    'checks every request when the cache is off (%o)',
    async (off) => {
      clock = Date.now();
      const { tokens, onKeyLookup } = cachingVerifier(off);
      const bearer = `Bearer ${await hs256({ role: 'support' })}`;
      await tokens.verify(bearer);
      await tokens.verify(bearer);
      expect(onKeyLookup).toHaveBeenCalledTimes(2);
      expect(tokens.cachedTokens).toBe(0);
    },
  );
});

describe('bearer tokens from a JWKS (RS256/ES256) with key rotation', () => {
  let server: http.Server;
  let jwksUrl: string;
  let published: JWK[] = [];
  let fetches = 0;
  let failing = false;

  beforeAll(async () => {
    server = http.createServer((_request, response) => {
      fetches += 1;
      response.writeHead(failing ? 500 : 200, {
        'Content-Type': 'application/json',
      });
      response.end(failing ? '{}' : JSON.stringify({ keys: published }));
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

  /** A fresh RS256 key published as `kid`, and a token signed with it. */
  async function keyAndToken(kid: string) {
    const pair = await generateKeyPair('RS256');
    const jwk: JWK = {
      ...(await exportJWK(pair.publicKey)),
      kid,
      alg: 'RS256',
      use: 'sig',
    };
    const token = await new SignJWT({ role: 'engineering' })
      .setProtectedHeader({ alg: 'RS256', kid })
      .setAudience(AUDIENCE)
      .setExpirationTime('1h')
      .sign(pair.privateKey);
    return { jwk, bearer: `Bearer ${token}` };
  }

  it('refuses a cached token once a refetch shows its key was removed', async () => {
    const old = await keyAndToken('old');
    const next = await keyAndToken('next');
    published = [old.jwk];
    const onKeyLookup = vi.fn();
    const tokens = createTokenVerifier({
      jwksUrl,
      audience: AUDIENCE,
      roleClaim: 'role',
      jwksCooldownMs: 0,
      onKeyLookup,
    });
    await tokens.verify(old.bearer);
    await tokens.verify(old.bearer);
    expect(onKeyLookup).toHaveBeenCalledTimes(1);
    // The provider rotates: the next token's unknown kid makes pgmcp refetch and see the change.
    published = [next.jwk];
    expect((await tokens.verify(next.bearer)).role).toBe('engineering');
    await expect(tokens.verify(old.bearer)).rejects.toMatchObject({
      reason: 'INVALID_TOKEN',
    });
    // Tokens from the current key are cached again.
    await tokens.verify(next.bearer);
    onKeyLookup.mockClear();
    await tokens.verify(next.bearer);
    expect(onKeyLookup).toHaveBeenCalledTimes(0);
  });

  it('refetches a stale key set on a cache hit, so a removed key is refused with no other token seen', async () => {
    const old = await keyAndToken('old');
    const next = await keyAndToken('next');
    published = [old.jwk, next.jwk];
    const onKeyLookup = vi.fn();
    // Max age 0: every request finds the set stale, as one does after 10 minutes by default.
    const tokens = createTokenVerifier({
      jwksUrl,
      audience: AUDIENCE,
      roleClaim: 'role',
      jwksMaxAgeMs: 0,
      onKeyLookup,
    });
    await tokens.verify(old.bearer);
    fetches = 0;
    await tokens.verify(old.bearer);
    expect(onKeyLookup).toHaveBeenCalledTimes(1);
    expect(fetches).toBe(1);
    published = [next.jwk];
    await expect(tokens.verify(old.bearer)).rejects.toMatchObject({
      reason: 'INVALID_TOKEN',
    });
    expect(tokens.cachedTokens).toBe(0);
  });

  it('sees a key removed by a refetch in the same millisecond as the fetch before it', async () => {
    const old = await keyAndToken('old');
    const next = await keyAndToken('next');
    published = [old.jwk, next.jwk];
    // The clock stands still: every fetch of the key set carries the same time.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      const tokens = createTokenVerifier({
        jwksUrl,
        audience: AUDIENCE,
        roleClaim: 'role',
        jwksMaxAgeMs: 0,
      });
      await tokens.verify(old.bearer);
      await tokens.verify(old.bearer);
      published = [next.jwk];
      await expect(tokens.verify(old.bearer)).rejects.toMatchObject({
        reason: 'INVALID_TOKEN',
      });
    } finally {
      vi.useRealTimers();
    }
  });

  it('refuses a cached token as KEYS_UNAVAILABLE when its stale key set cannot be refetched, as a full check would', async () => {
    const current = await keyAndToken('current');
    published = [current.jwk];
    const tokens = createTokenVerifier({
      jwksUrl,
      audience: AUDIENCE,
      roleClaim: 'role',
      jwksMaxAgeMs: 0,
    });
    await tokens.verify(current.bearer);
    failing = true;
    try {
      await expect(tokens.verify(current.bearer)).rejects.toMatchObject({
        reason: 'KEYS_UNAVAILABLE',
      });
      // An uncached check answers the same: a JWKS answering 500 is the provider's fault.
      const uncached = createTokenVerifier({
        jwksUrl,
        audience: AUDIENCE,
        roleClaim: 'role',
      });
      await expect(uncached.verify(current.bearer)).rejects.toMatchObject({
        reason: 'KEYS_UNAVAILABLE',
      });
    } finally {
      failing = false;
    }
    expect((await tokens.verify(current.bearer)).role).toBe('engineering');
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
