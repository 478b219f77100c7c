// Who this server is to a token: the audience tokens must carry (RFC 8707) and the OAuth
// protected-resource metadata document (RFC 9728) that names it and its authorization server.

/** The settings the audience is made of. */
export interface AudienceSettings {
  /** PGMCP_JWT_AUDIENCE: the audience, as configured. */
  readonly audience: string | undefined;
  /** The HTTP bind address. */
  readonly host: string;
}

/**
 * The audience tokens must carry: the configured one, or this server's resource URL on `port`
 * (the port bound, which differs from the configured one when that is 0).
 */
export function tokenAudience(
  settings: AudienceSettings,
  port: number,
): string {
  const { host } = settings;
  return (
    settings.audience ??
    `http://${host.includes(':') ? `[${host}]` : host}:${port}/mcp`
  );
}

/** The issuer tokens are minted with: the configured one, or the audience's origin. */
export function tokenIssuer(
  issuer: string | undefined,
  audience: string,
): string {
  return issuer ?? new URL(audience).origin;
}

/** Where the protected-resource metadata is served, and what it says, for `audience`. */
export interface ProtectedResource {
  readonly metadataUrl: string;
  readonly document: Record<string, unknown>;
}

/**
 * The metadata document for the resource `audience`, whose tokens `issuer` (if set) issues;
 * `scopes_supported` lists `scopes` when the config file maps any (RFC 9728 §2).
 */
export function protectedResourceMetadata(
  audience: string,
  issuer: string | undefined,
  scopes: readonly string[] = [],
): ProtectedResource {
  return {
    metadataUrl: `${new URL(audience).origin}/.well-known/oauth-protected-resource/mcp`,
    document: {
      resource: audience,
      authorization_servers: [tokenIssuer(issuer, audience)],
      ...(scopes.length === 0 ? {} : { scopes_supported: [...scopes] }),
      bearer_methods_supported: ['header'],
    },
  };
}
