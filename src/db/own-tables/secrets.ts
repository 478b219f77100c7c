// Secrets shared by every replica on one database, created on first use (pgmcp.server_secrets).
import { randomBytes } from 'node:crypto';
import type pg from 'pg';

/** Return the named shared secret, creating a random one if none exists yet (race-safe). */
export async function loadSharedSecret(
  client: pg.Client,
  name: string,
): Promise<string> {
  // Read first: the authenticator login may read the secrets but not write them.
  const existing = await client.query<{ secret: string }>(
    'select secret from pgmcp.server_secrets where name = $1',
    [name],
  );
  if (existing.rows[0] !== undefined) return existing.rows[0].secret;
  const candidate = randomBytes(32).toString('base64url');
  await client.query(
    'insert into pgmcp.server_secrets (name, secret) values ($1, $2) on conflict (name) do nothing',
    [name, candidate],
  );
  const { rows } = await client.query<{ secret: string }>(
    'select secret from pgmcp.server_secrets where name = $1',
    [name],
  );
  const secret = rows[0]?.secret;
  if (secret === undefined)
    throw new Error(`shared secret ${name} could not be stored`);
  return secret;
}
