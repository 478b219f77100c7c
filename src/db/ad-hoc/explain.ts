// The explain tool's plans, and the tables a statement reads (for consent checks), over the public
// API on a tool connection.
import type { Principal } from '../../auth/index.js';
import { type DatabaseHandle } from '../pool.js';
import { type AdHocSqlOptions, type ToolSession } from './tool-session.js';
import type { ReadServer } from '../standby/standby-options.js';
import { answeredBy, withToolConnection, single } from './tool-connection.js';
import { verifySettings, beginReadOnly, checkCost } from './settings.js';

/** The plan of the caller's statement as JSON (EXPLAIN FORMAT JSON), executed only with `analyze`. */
export async function explainSql(
  db: DatabaseHandle,
  principal: Principal,
  options: AdHocSqlOptions & { readonly analyze: boolean },
): Promise<{ plan: unknown; text: string; server?: ReadServer }> {
  return withToolConnection({ db, principal, options }, async (session) => {
    const { client } = session;
    const schemaPlan = await beginReadOnly(session, principal, options);
    if (options.analyze)
      await checkCost(session, options, {
        plan: schemaPlan,
        prefix: 'EXPLAIN (FORMAT JSON) ',
      });
    session.prefixLength = 'EXPLAIN (FORMAT TEXT) '.length;
    const text = await client.query<{ 'QUERY PLAN': string }>(
      single(`EXPLAIN (FORMAT TEXT) ${options.sql}`, [...options.params]),
    );
    // Planning may evaluate functions (constant folding): the settings must still be pgmcp's.
    await verifySettings(session);
    const plan = options.analyze
      ? await explainAnalyzed(session, options)
      : await explainJson(session, options);
    await verifySettings(session);
    return answeredBy(session, {
      plan,
      text: text.rows.map((row) => row['QUERY PLAN']).join('\n'),
    });
  });
}

/** EXPLAIN (FORMAT JSON) of the caller's statement, without running it. */
async function explainJson(
  session: ToolSession,
  options: AdHocSqlOptions,
): Promise<unknown> {
  session.prefixLength = 'EXPLAIN (FORMAT JSON) '.length;
  const { rows } = await session.client.query<{ 'QUERY PLAN': unknown }>(
    single(`EXPLAIN (FORMAT JSON) ${options.sql}`, [...options.params]),
  );
  return rows[0]?.['QUERY PLAN'];
}

/**
 * The tables the caller's statement reads, from its plan (EXPLAIN (VERBOSE, FORMAT JSON): views
 * expanded to their tables), without running it: what a consent check needs to know.
 */
export async function tablesOfSql(
  db: DatabaseHandle,
  principal: Principal,
  options: AdHocSqlOptions,
): Promise<{ schema: string; table: string }[]> {
  return withToolConnection({ db, principal, options }, async (session) => {
    const { client } = session;
    await beginReadOnly(session, principal, options);
    session.prefixLength = 'EXPLAIN (VERBOSE, FORMAT JSON) '.length;
    const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(
      single(`EXPLAIN (VERBOSE, FORMAT JSON) ${options.sql}`, [
        ...options.params,
      ]),
    );
    const found = new Map<string, { schema: string; table: string }>();
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      if (typeof node !== 'object' || node === null) return;
      const fields = node as Record<string, unknown>;
      const schema = fields['Schema'];
      const table = fields['Relation Name'];
      if (typeof schema === 'string' && typeof table === 'string')
        found.set(`${schema}.${table}`, { schema, table });
      Object.values(fields).forEach(walk);
    };
    walk(rows[0]?.['QUERY PLAN']);
    return [...found.values()];
  });
}

/**
 * EXPLAIN ANALYZE runs the statement, so it runs where query's FETCH does: inside the role's own
 * security-definer function, where no role change is possible. The statement is PREPAREd (one
 * statement, through the extended protocol) and EXECUTEd there with the parameters as literals,
 * which PostgreSQL converts to the types it inferred; the clean-up drops the prepared statement.
 */
async function explainAnalyzed(
  session: ToolSession,
  options: AdHocSqlOptions,
): Promise<unknown> {
  const { client, functions } = session;
  session.prepared = true;
  session.prefixLength = 'PREPARE pgmcp_tool_statement AS '.length;
  await client.query(
    single(`PREPARE pgmcp_tool_statement AS ${options.sql}`, []),
  );
  session.prefixLength = 'PREPARE pgmcp_tool_statement AS '.length;
  const { rows } = await client.query<{ plan: unknown }>(
    `select ${functions.explain}($1) as plan`,
    [[...options.params]],
  );
  return rows[0]?.plan;
}
