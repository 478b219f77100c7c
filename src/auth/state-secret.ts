// Secrets pgmcp keeps for itself in the state folder (.pgmcp/): the embedded default's HS256 signing
// secret and its authenticator's password. Created on first use, readable by their owner only.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** The secret `name` in `stateDirectory`, created (32 random bytes) if it does not exist yet. */
export function stateSecret(stateDirectory: string, name: string): string {
  const file = path.join(stateDirectory, name);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(stateDirectory, { recursive: true });
  const value = randomBytes(32).toString('base64url');
  writeFileSync(file, `${value}\n`, { mode: 0o600 });
  return value;
}

/** Where the HS256 secret comes from: configured settings, and the state folder if embedded. */
export interface SigningSecretSettings {
  /** PGMCP_JWT_SECRET. */
  readonly secret: string | undefined;
  /** PGMCP_JWKS_URL: with one (and no secret), tokens come from an identity provider. */
  readonly jwksUrl: string | undefined;
  /** The state folder, when the embedded default runs (it keeps a development secret there). */
  readonly stateDirectory: string | undefined;
}

/** The state-folder file the development secret lives in; undefined when it is not used. */
export function developmentSecretFile(
  settings: SigningSecretSettings,
): string | undefined {
  if (settings.secret !== undefined || settings.jwksUrl !== undefined)
    return undefined;
  return settings.stateDirectory === undefined
    ? undefined
    : path.join(settings.stateDirectory, 'jwt-secret');
}

/**
 * The HS256 secret: configured, or (embedded default, no JWKS) generated once in the state folder.
 * With `create: false`, a state-folder secret that does not exist yet is undefined, not made.
 */
export function jwtSecret(
  settings: SigningSecretSettings,
  options: { create: boolean } = { create: true },
): string | undefined {
  const file = developmentSecretFile(settings);
  if (file === undefined || settings.stateDirectory === undefined)
    return settings.secret;
  if (!options.create && !existsSync(file)) return undefined;
  return stateSecret(settings.stateDirectory, path.basename(file));
}
