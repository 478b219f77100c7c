// What `pgmcp serve` prints once HTTP is up: a curl that works as printed.
import { serverAudience, signingSecretSettings } from '../app/index.js';
import { jwtSecret, mintToken, tokenIssuer } from '../auth/index.js';
import type { Config } from '../config/index.js';
import { AUTHENTICATOR_ROLE } from '../db/index.js';

/** The demo role the embedded default's banner mints a token for (seeds/demo/05_roles.sql). */
const BANNER_DEMO_ROLE = 'support';

/**
 * The banner for the server at `url`. With tokens, the embedded default mints one for a demo role;
 * elsewhere a TOKEN=… line comes first.
 */
export async function serveBanner(
  config: Config,
  url: string,
): Promise<string> {
  const { authorization, before, after } = await bannerAuthorization(
    config,
    url,
  );
  return (
    `\npgmcp is serving MCP 2026-07-28 at ${url}\n` +
    before +
    `  try:    curl -s ${url}${authorization} -H 'Content-Type: application/json' -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: server/discover' \\\n` +
    `            -d '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'\n` +
    after +
    `  connect an MCP host (Streamable HTTP) to ${url}; stop with Ctrl-C\n\n`
  );
}

/** The curl's Authorization header, and the lines before and after the curl that explain it. */
async function bannerAuthorization(
  config: Config,
  url: string,
): Promise<{ authorization: string; before: string; after: string }> {
  const demoSecret =
    config.auth.mode === 'jwt' && config.database.mode === 'embedded'
      ? jwtSecret(signingSecretSettings(config))
      : undefined;
  if (demoSecret !== undefined) {
    const audience = serverAudience(config, Number(new URL(url).port));
    const minted = await mintToken({
      secret: demoSecret,
      role: BANNER_DEMO_ROLE,
      claims: {},
      audience,
      issuer: tokenIssuer(config.auth.issuer, audience),
      ttlSeconds: 3600,
    });
    return {
      authorization: ` -H 'Authorization: Bearer ${minted}'`,
      before: '',
      after: `  the token above is role ${BANNER_DEMO_ROLE}'s for 1 h; mint more: npx pgmcp token --role <role>   (demo roles: support, engineering, finance, admin)\n`,
    };
  }
  if (config.auth.mode === 'jwt')
    return {
      authorization: ` -H "Authorization: Bearer $TOKEN"`,
      before:
        config.auth.secret === undefined
          ? `  every request needs a bearer token from your identity provider: TOKEN=<its token>\n`
          : `  every request needs a bearer token: TOKEN=$(npx pgmcp token --role <a role granted to ${AUTHENTICATOR_ROLE}>)\n`,
      after: '',
    };
  return { authorization: '', before: '', after: '' };
}
