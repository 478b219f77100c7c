// Drop and create one database on a server the tests (or the conformance runner) may administer.
import pg from 'pg';

/** Recreate database `name` (terminating its sessions) and return its URL on `baseUrl`'s server. */
export async function recreateDatabase(
  baseUrl: string,
  name: string,
): Promise<string> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name))
    throw new Error(`unsafe database name ${name}`);
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  try {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
