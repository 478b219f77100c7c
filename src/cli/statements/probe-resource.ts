// The self-test's probe (pgmcp selftest): one stored resource committed through the administrative
// login, so its change travels the real change path, then deleted again. A login that may not
// (the serve login, which writes no resources) is told exactly which grant and policy it lacks.
import {
  withAdminClient,
  type AdminClient,
  type DatabaseHandle,
} from '../../db/index.js';

/** The probe's URIs all start so: the policy a DBA adds for it admits these rows and no others. */
export const PROBE_URI_PREFIX = 'pgmcp-selftest:///';

/** The columns the probe writes (a column-level INSERT grant names exactly these). */
const PROBE_COLUMNS = ['uri', 'name', 'title', 'mime_type', 'text', 'readers'];

/** What the login lacks to commit and delete probes, read from the catalog as the login itself. */
const LACKS = `
  select format('%I', current_user) as login,
         not (select bool_and(has_column_privilege('pgmcp.resources', c, 'INSERT'))
                from unnest($1::text[]) c) as insert,
         not has_table_privilege('pgmcp.resources', 'DELETE') as delete,
         -- Row-level security is on (and forced) for pgmcp.resources: a login that neither owns it
         -- nor bypasses RLS also needs a policy that lets it write, see and delete its probes.
         (select c.relrowsecurity from pg_class c where c.oid = 'pgmcp.resources'::regclass)
           and not (select r.rolbypassrls from pg_roles r where r.rolname = current_user)
           and not pg_has_role((select c.relowner from pg_class c
                                 where c.oid = 'pgmcp.resources'::regclass), 'USAGE')
           and not exists (
             select from pg_policy p
              where p.polrelid = 'pgmcp.resources'::regclass and p.polcmd = '*'
                and (0 = any(p.polroles)
                     or exists (select from unnest(p.polroles) role
                                 where pg_has_role(role, 'MEMBER')))) as policy`;

/** Why the probe could not be committed or removed, and the statements a DBA runs once to allow it. */
export class ProbeRefusedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ProbeRefusedError';
  }
}

/**
 * Commit a stored resource at `uri` (under PROBE_URI_PREFIX) readable by `readers`; resolves to the
 * function that deletes it (also a committed change). Throws ProbeRefusedError naming the
 * privileges and the policy the login lacks when PostgreSQL refuses it (42501).
 */
export async function commitProbeResource(
  db: DatabaseHandle,
  uri: string,
  readers: readonly string[],
): Promise<() => Promise<void>> {
  await withAdminClient(db, async (client) => {
    try {
      await client.query(
        `insert into pgmcp.resources (${PROBE_COLUMNS.join(', ')})
         values ($1, 'pgmcp-selftest', 'pgmcp self-test probe', 'text/plain',
                 'Written and deleted by pgmcp selftest.', $2)`,
        [uri, readers],
      );
    } catch (error) {
      throw await refusal(client, error, 'commit a probe resource');
    }
  });
  return async function removeProbeResource() {
    await withAdminClient(db, async (client) => {
      let deleted: number | null;
      try {
        ({ rowCount: deleted } = await client.query(
          'delete from pgmcp.resources where uri = $1',
          [uri],
        ));
      } catch (error) {
        throw await refusal(client, error, `delete the probe ${uri}`);
      }
      // Row-level security hides a row the login may not see: the delete finds nothing to delete.
      if (deleted !== 1)
        throw await refusal(
          client,
          new Error('the login does not see the probe it committed'),
          `delete the probe ${uri}`,
        );
    });
  };
}

/** `error` as a ProbeRefusedError naming what the login lacks, when that is why; else `error`. */
async function refusal(
  client: AdminClient,
  error: unknown,
  what: string,
): Promise<unknown> {
  const code = (error as { code?: unknown }).code;
  if (code !== undefined && code !== '42501') return error;
  const { rows } = await client.query<{
    login: string;
    insert: boolean;
    delete: boolean;
    policy: boolean;
  }>(LACKS, [PROBE_COLUMNS]);
  const lacks = rows[0];
  if (lacks === undefined) return error;
  const privileges = [
    ...(lacks.insert ? [`INSERT (${PROBE_COLUMNS.join(', ')})`] : []),
    ...(lacks.delete ? ['DELETE'] : []),
  ];
  const statements = [
    ...(privileges.length === 0
      ? []
      : [
          `GRANT ${privileges.join(', ')} ON pgmcp.resources TO ${lacks.login};`,
        ]),
    ...(lacks.policy
      ? [
          `CREATE POLICY pgmcp_selftest_probe ON pgmcp.resources TO ${lacks.login} ` +
            `USING (uri LIKE '${PROBE_URI_PREFIX}%') WITH CHECK (uri LIKE '${PROBE_URI_PREFIX}%');`,
        ]
      : []),
  ];
  const said = error instanceof Error ? error.message : String(error);
  if (statements.length === 0)
    return new ProbeRefusedError(
      `the login ${lacks.login} may not ${what} (${said}), though it holds the privileges and a policy the check needs: see the table's policies`,
      { cause: error },
    );
  return new ProbeRefusedError(
    `the login ${lacks.login} may not ${what} (${said}); ` +
      `a DBA runs, once: ${statements.join(' ')}`,
    { cause: error },
  );
}
