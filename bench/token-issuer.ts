// The bench's identity provider: bearer tokens as users send them, signed with an HS256 secret or
// with an ES256 key whose public half a JWKS document on a loopback port serves.
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import {
  exportJWK,
  generateKeyPair,
  SignJWT,
  type CryptoKey,
  type JWK,
} from 'jose';

export type TokenScheme = 'hs256' | 'jwks';

/** One caller: the Authorization header it sends, and the role its token names. */
export interface Caller {
  readonly authorization: string;
  readonly role: string;
}

export interface TokenIssuer {
  readonly scheme: TokenScheme;
  /** The audience every token carries and the server requires. */
  readonly audience: string;
  /** The server's verification settings: the HS256 secret, or the JWKS URL. */
  readonly secret: string | undefined;
  readonly jwksUrl: string | undefined;
  /** `count` callers with distinct tokens (own `sub` and `jti`) for each role, interleaved. */
  mint(roles: readonly string[], count: number): Promise<Caller[]>;
  close(): Promise<void>;
}

const AUDIENCE = 'http://127.0.0.1/mcp';
const KEY_ID = 'bench-es256';

async function serveJwks(
  jwk: JWK,
): Promise<{ url: string; close: () => Promise<void> }> {
  const document = JSON.stringify({
    keys: [{ ...jwk, kid: KEY_ID, alg: 'ES256', use: 'sig' }],
  });
  const server = http.createServer((_request, response) => {
    response.writeHead(200, { 'Content-Type': 'application/json' });
    response.end(document);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Start an issuer: a fresh secret or key pair per bench run. */
export async function startTokenIssuer(
  scheme: TokenScheme,
): Promise<TokenIssuer> {
  const secret = randomBytes(32).toString('base64url');
  let jwks: { url: string; close: () => Promise<void> } | undefined;
  let sign: (jwt: SignJWT) => Promise<string>;
  if (scheme === 'hs256') {
    const key = new TextEncoder().encode(secret);
    sign = (jwt) => jwt.setProtectedHeader({ alg: 'HS256' }).sign(key);
  } else {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    jwks = await serveJwks(await exportJWK(publicKey));
    const key: CryptoKey = privateKey;
    sign = (jwt) =>
      jwt.setProtectedHeader({ alg: 'ES256', kid: KEY_ID }).sign(key);
  }
  return {
    scheme,
    audience: AUDIENCE,
    secret: scheme === 'hs256' ? secret : undefined,
    jwksUrl: jwks?.url,
    async mint(roles, count) {
      const callers: Caller[] = [];
      for (let index = 0; index < count; index += 1)
        for (const role of roles) {
          const token = await sign(
            new SignJWT({ role })
              .setSubject(`bench-user-${role}-${index}`)
              .setJti(randomUUID())
              .setAudience(AUDIENCE)
              .setIssuedAt()
              .setExpirationTime('2h'),
          );
          callers.push({ authorization: `Bearer ${token}`, role });
        }
      return callers;
    },
    close: async () => {
      await jwks?.close();
    },
  };
}
