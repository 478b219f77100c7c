// The peer in `npm run bench`: the official MCP TypeScript SDK (@modelcontextprotocol/server)
// serving the same stored resources as pgmcp's resources/read, as a server built on it would:
// a resource template over pgmcp.resources, read by URI from the same database with its own pg
// pool, over Streamable HTTP on a loopback port, a bearer token verified on every request with
// jose's jwtVerify (the SDK's requireBearerAuth gate with a verifier, no cache), JSON responses.
// It reads as its login, with no role switch per request: less work than pgmcp does.
import http from 'node:http';
import {
  createMcpHandler,
  McpServer,
  OAuthError,
  OAuthErrorCode,
  requireBearerAuth,
  ResourceTemplate,
  type AuthInfo,
} from '@modelcontextprotocol/server';
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';
import pg from 'pg';
import type { TokenIssuer } from './token-issuer.js';

export interface PeerServer {
  /** The MCP endpoint. */
  readonly url: string;
  close(): Promise<void>;
}

const READ = `select uri, mime_type, text, blob from pgmcp.resources where uri = $1`;

interface ReadRow {
  uri: string;
  mime_type: string | null;
  text: string | null;
  blob: Buffer | null;
}

/** Verifies each token in full, as the issuer's settings say (HS256 secret or JWKS). */
function verifier(issuer: TokenIssuer): {
  verifyAccessToken(token: string): Promise<AuthInfo>;
} {
  const options = {
    algorithms: issuer.jwksUrl === undefined ? ['HS256'] : ['ES256'],
    audience: issuer.audience,
    requiredClaims: ['exp'],
  };
  const secret = new TextEncoder().encode(issuer.secret);
  const keySet: JWTVerifyGetKey | undefined =
    issuer.jwksUrl === undefined
      ? undefined
      : createRemoteJWKSet(new URL(issuer.jwksUrl));
  return {
    async verifyAccessToken(token) {
      try {
        const { payload } =
          keySet === undefined
            ? await jwtVerify(token, secret, options)
            : await jwtVerify(token, keySet, options);
        return {
          token,
          clientId: payload.sub ?? 'unknown',
          scopes: [],
          ...(payload.exp === undefined ? {} : { expiresAt: payload.exp }),
        };
      } catch (error) {
        throw new OAuthError(
          OAuthErrorCode.InvalidToken,
          error instanceof Error ? error.message : 'invalid token',
        );
      }
    },
  };
}

/** The SDK server for one request: one resource template over the stored resources. */
function serverFactory(pool: pg.Pool): () => McpServer {
  return () => {
    const server = new McpServer({ name: 'bench-peer', version: '1.0.0' });
    server.registerResource(
      'stored',
      new ResourceTemplate('bench:///r/{id}', { list: undefined }),
      { mimeType: 'text/markdown' },
      async (uri) => {
        const { rows } = await pool.query<ReadRow>({
          name: 'bench_peer_read',
          text: READ,
          values: [uri.href],
        });
        return {
          contents: rows.map((row) =>
            row.text !== null
              ? {
                  uri: row.uri,
                  ...(row.mime_type === null
                    ? {}
                    : { mimeType: row.mime_type }),
                  text: row.text,
                }
              : {
                  uri: row.uri,
                  ...(row.mime_type === null
                    ? {}
                    : { mimeType: row.mime_type }),
                  blob: (row.blob ?? Buffer.alloc(0)).toString('base64'),
                },
          ),
        };
      },
    );
    return server;
  };
}

/** A node:http request as the web-standard Request the SDK's fetch face takes. */
async function toRequest(request: http.IncomingMessage): Promise<Request> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers))
    if (typeof value === 'string') headers.set(name, value);
    else if (Array.isArray(value))
      for (const item of value) headers.append(name, item);
  const method = request.method ?? 'GET';
  return new Request(`http://${request.headers.host}${request.url ?? '/'}`, {
    method,
    headers,
    ...(method === 'GET' || method === 'HEAD'
      ? {}
      : { body: Buffer.concat(chunks) }),
  });
}

/** Start the peer on a free loopback port, with a pool of `poolSize` connections. */
export async function startPeerServer(options: {
  readonly connectionString: string;
  readonly issuer: TokenIssuer;
  readonly poolSize: number;
}): Promise<PeerServer> {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.poolSize,
  });
  const handler = createMcpHandler(serverFactory(pool), {
    legacy: 'reject',
    responseMode: 'json',
  });
  const gate = requireBearerAuth({ verifier: verifier(options.issuer) });
  const serveOne = async (
    incoming: http.IncomingMessage,
    outgoing: http.ServerResponse,
  ): Promise<void> => {
    const request = await toRequest(incoming);
    const auth = await gate(request);
    const response =
      auth instanceof Response
        ? auth
        : await handler.fetch(request, { authInfo: auth });
    const body = Buffer.from(await response.arrayBuffer());
    const headers: Record<string, string | number> = {};
    response.headers.forEach((value, name) => {
      headers[name] = value;
    });
    headers['content-length'] = body.length;
    outgoing.writeHead(response.status, headers);
    outgoing.end(body);
  };
  const server = http.createServer((incoming, outgoing) => {
    serveOne(incoming, outgoing).catch((error: unknown) => {
      outgoing.writeHead(500, { 'Content-Length': 0 });
      outgoing.end();
      process.stderr.write(`bench peer: ${String(error)}\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await handler.close();
      await pool.end();
    },
  };
}
