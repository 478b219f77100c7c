// pgmcp.member_roles() (migrations 0011, 0024) holds exactly the roles whose privileges PostgreSQL gives
// the current role: through INHERIT memberships, never through a NOINHERIT role.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabaseUrl } from '../setup/harness.js';

let sql: pg.Client;
const prefix = `pgmcp_mr_${randomBytes(4).toString('hex')}`;
const role = (name: string): string => `${prefix}_${name}`;
// A word only this file's resources hold, for pgmcp.search_resources.
const WORD = `mrword${prefix.slice(-8)}`;

// top → mid → leaf is an INHERIT chain; top → gate → beyond passes a NOINHERIT role (gate), which
// holds beyond's privileges only after SET ROLE; solo is NOINHERIT and a member of leaf.
const NAMES = ['top', 'mid', 'leaf', 'gate', 'beyond', 'solo'] as const;
type Name = (typeof NAMES)[number];
const NOINHERIT: readonly Name[] = ['gate', 'solo'];
const GRANTS: readonly [Name, Name][] = [
  ['mid', 'top'],
  ['leaf', 'mid'],
  ['gate', 'top'],
  ['beyond', 'gate'],
  ['leaf', 'solo'],
];
const INHERITED: Record<Name, Name[]> = {
  top: ['top', 'mid', 'leaf', 'gate'],
  mid: ['mid', 'leaf'],
  leaf: ['leaf'],
  gate: ['gate'],
  beyond: ['beyond'],
  solo: ['solo'],
};

beforeAll(async () => {
  sql = new pg.Client({ connectionString: testDatabaseUrl() });
  await sql.connect();
  // Everything happens in one transaction that is rolled back: roles, tables and resources.
  await sql.query('begin');
  for (const name of NAMES) {
    await sql.query(
      `create role ${role(name)} nologin ${NOINHERIT.includes(name) ? 'noinherit' : 'inherit'}`,
    );
    await sql.query(`create table ${role(name)}_t (id int)`);
    await sql.query(`grant select on ${role(name)}_t to ${role(name)}`);
    await sql.query(
      `insert into pgmcp.resources (uri, name, text, readers) values ($1, 'x', $3, $2)`,
      [`test:///${prefix}/${name}`, [role(name)], `about ${WORD}`],
    );
  }
  for (const [granted, member] of GRANTS)
    await sql.query(`grant ${role(granted)} to ${role(member)}`);
});

afterAll(async () => {
  await sql.query('rollback');
  await sql.end();
});

/** As `name`: member_roles(), the test resources row-level security lets it see and search finds. */
async function asRole(
  name: string,
): Promise<{ members: string[]; visible: string[]; found: string[] }> {
  await sql.query(`set local role ${name}`);
  try {
    const members = await sql.query<{ roles: string[] }>(
      'select pgmcp.member_roles() as roles',
    );
    const visible = await sql.query<{ reader: string }>(
      `select readers[1] as reader from pgmcp.resources where uri like $1`,
      [`test:///${prefix}/%`],
    );
    // The search runs as the table's owner and applies these rules itself (migration 0022).
    const found = await sql.query<{ uri: string }>(
      `select uri from pgmcp.search_resources($1, 100)`,
      [WORD],
    );
    return {
      members: members.rows[0]?.roles ?? [],
      visible: visible.rows.map((row) => row.reader),
      found: found.rows.map((row) => row.uri.split('/').at(-1) ?? ''),
    };
  } finally {
    await sql.query('reset role');
  }
}

describe('pgmcp.member_roles()', () => {
  it.each(NAMES)(
    'holds for %s exactly the roles it inherits, as has_table_privilege and RLS see them',
    async (name) => {
      const { members, visible, found } = await asRole(role(name));
      const ours = members.filter((member) => member.startsWith(`${prefix}_`));
      expect(ours.sort()).toEqual(INHERITED[name].map(role).sort());
      expect(members).toContain('public');
      expect(visible.sort()).toEqual(ours.sort());
      expect(found.sort()).toEqual([...INHERITED[name]].sort());
      // PostgreSQL's own answer: SELECT on each role's table only through inherited privileges.
      const privileges = await sql.query<{ name: string; allowed: boolean }>(
        `select n as name, has_table_privilege($1, n || '_t', 'select') as allowed
           from unnest($2::text[]) n`,
        [role(name), NAMES.map(role)],
      );
      for (const row of privileges.rows)
        expect(ours.includes(row.name), row.name).toBe(row.allowed);
    },
  );

  it('finds a role whose name needs quoting, and the roles it inherits', async () => {
    const quoted = `${prefix} Mixed "Case"`;
    const ident = `"${quoted.replaceAll('"', '""')}"`;
    await sql.query(`create role ${ident} nologin inherit`);
    await sql.query(`grant ${role('leaf')} to ${ident}`);
    const { members, visible, found } = await asRole(ident);
    expect(members.sort()).toEqual([quoted, role('leaf'), 'public'].sort());
    expect(visible).toEqual([role('leaf')]);
    expect(found).toEqual(['leaf']);
  });

  it('gives the NOINHERIT authenticator none of the roles granted to it', async () => {
    await sql.query(`grant ${role('top')} to pgmcp_authenticator`);
    const { members, visible, found } = await asRole('pgmcp_authenticator');
    expect(members.sort()).toEqual(['pgmcp_authenticator', 'public']);
    expect(visible).toEqual([]);
    expect(found).toEqual([]);
  });
});
