// The consent tests' own database (issue 17): stored HR notes, one of them marked sensitive, and a
// payroll.pay table exposed as rows and marked sensitive in the servers' config.
import type { Principal } from '../../src/auth/index.js';
import { META, type TestServerOptions } from './harness.js';
import { migrateDatabase } from './migrate-database.js';
import { recreateDatabase } from './recreate-database.js';

/** A stored resource marked sensitive. */
export const SALARIES = 'file:///hr/salaries.md';
/** A stored resource that is not. */
export const HANDBOOK = 'file:///hr/handbook.md';
/** The request `_meta` of a client that declares form elicitation. */
export const ELICITATION = {
  ...META,
  'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
};

/**
 * Recreate database `name` with `roles` (made when missing), the HR directory and notes readable by
 * all of them, and payroll.pay (one row: id 1, amount 100) exposed and selectable by `payrollRoles`.
 * Returns its URL.
 */
export async function createPayrollDatabase(
  serverUrl: string,
  name: string,
  roles: readonly string[],
  payrollRoles: readonly string[],
): Promise<string> {
  const databaseUrl = await recreateDatabase(serverUrl, name);
  const readers = `{${roles.join(',')}}`;
  await migrateDatabase(databaseUrl, async (admin) => {
    for (const role of roles)
      await admin.query(
        `do $$ begin if not exists (select from pg_roles where rolname = '${role}') then create role ${role} nologin; end if; end $$`,
      );
    await admin.query(`
      insert into pgmcp.resources (uri, name, text, readers, sensitive) values
        ('file:///hr/', 'hr', 'HR', '${readers}', false),
        ('${SALARIES}', 'salaries.md', 'Ada: 100', '${readers}', true),
        ('${HANDBOOK}', 'handbook.md', 'Be kind', '${readers}', false);
      create schema payroll;
      create table payroll.pay (id int primary key, amount int);
      insert into payroll.pay values (1, 100);
      select pgmcp.expose_table('payroll.pay');
    `);
    for (const role of payrollRoles)
      await admin.query(
        `grant usage on schema payroll to ${role}; grant select on payroll.pay to ${role}`,
      );
  });
  return databaseUrl;
}

/** A server on that database as `principal`, with payroll.pay's rows served and marked sensitive. */
export function payrollServerOptions(
  databaseUrl: string,
  principal: Principal,
): TestServerOptions {
  return {
    databaseUrl,
    principal,
    collections: [
      {
        database: undefined,
        schema: 'payroll',
        table: 'pay',
        list: false,
        titleColumn: undefined,
      },
    ],
    sensitive: [
      { database: undefined, schema: 'payroll', table: 'pay', columns: null },
    ],
    catalogScope: { include: ['payroll'], exclude: [] },
  };
}
