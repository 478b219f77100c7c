// pgmcp token: a development bearer token (HS256) for a role the server would accept.
import path from 'node:path';
import { serverAudience, signingSecretSettings } from '../app/index.js';
import {
  developmentSecretFile,
  isAllowedRoleName,
  jwtSecret,
  mintToken,
  tokenIssuer,
} from '../auth/index.js';
import { loadConfig, type Config } from '../config/index.js';
import {
  AUTHENTICATOR_ROLE,
  ROLE_REFUSALS,
  checkPoolRole,
  type RoleVerdict,
} from '../db/index.js';
import { ConfigError } from '../errors.js';
import type { Logger } from '../log.js';
import { openDatabase } from '../app/index.js';
import {
  UsageError,
  listFlag,
  stringFlag,
  type CliCommand,
  type ParsedFlags,
} from './flags.js';

const HELP = `Usage: pgmcp token --role R [--ttl 1h] [--claim key=value]…

Print a development token (HS256, signed with PGMCP_JWT_SECRET or, in the embedded default, the
secret kept in .pgmcp/jwt-secret) for role R, with audience PGMCP_JWT_AUDIENCE (default
http://HOST:PORT/mcp), a jti of its own (a --claim jti=… replaces it) and any extra claims, visible
to SQL as current_setting('request.jwt.claims').
  --ttl D        lifetime: a number with s, m, h or d (default 1h)
  --claim k=v    an extra claim (repeatable)
`;

const TTL_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

export const TOKEN_COMMAND: CliCommand = {
  name: 'token',
  help: HELP,
  options: {
    role: { type: 'string' },
    ttl: { type: 'string' },
    claim: { type: 'string', multiple: true },
  },
  run: token,
};

async function token(flags: ParsedFlags, logger: Logger): Promise<void> {
  const roleName = stringFlag(flags, 'role');
  if (roleName === undefined || flags.positionals.length > 0)
    throw new UsageError('token needs --role <role>');
  const ttlSeconds = parseTtl(stringFlag(flags, 'ttl') ?? '1h');
  const claims = parseClaims(listFlag(flags, 'claim') ?? []);
  const config = loadConfig({}, process.env);
  const secret = signingSecret(config);
  await refuseUnassumableRole(config, roleName, logger);
  const audience = serverAudience(config);
  const minted = await mintToken({
    secret,
    role: roleName,
    claims,
    audience,
    issuer: tokenIssuer(config.auth.issuer, audience),
    ttlSeconds,
  });
  process.stdout.write(`${minted}\n`);
}

function parseTtl(text: string): number {
  const ttl = /^(\d+)([smhd])$/.exec(text);
  if (ttl === null)
    throw new UsageError('--ttl takes a number and a unit: 30m, 1h, 7d');
  return Number(ttl[1]) * (TTL_UNITS[ttl[2] ?? 'h'] ?? 3600);
}

function parseClaims(pairs: readonly string[]): Record<string, string> {
  const claims: Record<string, string> = {};
  for (const pair of pairs) {
    const equals = pair.indexOf('=');
    if (equals <= 0)
      throw new UsageError(
        `--claim takes key=value (got ${JSON.stringify(pair)})`,
      );
    claims[pair.slice(0, equals)] = pair.slice(equals + 1);
  }
  return claims;
}

/** The HS256 secret a running server verifies with; never a new one (it would match no server). */
function signingSecret(config: Config): string {
  const settings = signingSecretSettings(config);
  const secret = jwtSecret(settings, { create: false });
  if (secret !== undefined) return secret;
  const file = developmentSecretFile(settings);
  if (file !== undefined)
    throw new ConfigError(
      `no development signing secret at ${path.resolve(file)}: run pgmcp token in the folder where npm start runs (after starting it once), or set PGMCP_JWT_SECRET.`,
    );
  throw new ConfigError(
    'pgmcp token signs with PGMCP_JWT_SECRET; with PGMCP_JWKS_URL, tokens come from your identity provider.',
  );
}

/** `pgmcp token` mints only for a role the server would accept: the same check as requests'. */
async function refuseUnassumableRole(
  config: Config,
  roleName: string,
  logger: Logger,
): Promise<void> {
  if (!isAllowedRoleName(roleName))
    throw new ConfigError(
      `${JSON.stringify(roleName)} is not a role name a token may carry`,
    );
  const open = await openDatabase(config, logger);
  let verdict: RoleVerdict;
  try {
    // Embedded, the CLI logs in as the cluster's superuser; requests log in as the authenticator.
    const login = open.embedded === undefined ? undefined : AUTHENTICATOR_ROLE;
    verdict = await checkPoolRole(open.db, roleName, login);
  } finally {
    await open.close();
  }
  if (verdict !== 'allowed')
    throw new ConfigError(
      `refusing to mint a token for ${JSON.stringify(roleName)}: ${ROLE_REFUSALS[verdict].replace('<role>', roleName)}`,
    );
}
