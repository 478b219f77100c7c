// The self-test's probe (pgmcp selftest): one stored resource committed through the administrative
// login, so its change travels the real change path, then deleted again.
import { withAdminClient } from './admin-client.js';
import type { DatabaseHandle } from './pool.js';

/**
 * Commit a stored resource at `uri` readable by `readers`; resolves to the function that deletes
 * it (also a committed change). Throws what PostgreSQL says when the login may not write it.
 */
export async function commitProbeResource(
  db: DatabaseHandle,
  uri: string,
  readers: readonly string[],
): Promise<() => Promise<void>> {
  await withAdminClient(db, (client) =>
    client.query(
      `insert into pgmcp.resources (uri, name, title, mime_type, text, readers)
       values ($1, 'pgmcp-selftest', 'pgmcp self-test probe', 'text/plain',
               'Written and deleted by pgmcp selftest.', $2)`,
      [uri, readers],
    ),
  );
  return async function removeProbeResource() {
    await withAdminClient(db, (client) =>
      client.query('delete from pgmcp.resources where uri = $1', [uri]),
    );
  };
}
