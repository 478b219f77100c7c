// Several databases through the real start-up path (startServer): each database has its own pool,
// change feed and URI authority; the config file's collections name the database they live in.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { ConfigError } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { call, listen, testDatabaseUrl, walkList } from '../setup/harness.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { ELICITATION } from '../setup/payroll-fixture.js';
import { recreateDatabase } from '../setup/recreate-database.js';

let mainUrl: string;
let hrUrl: string;
let hr: pg.Client;
let folder: string;
let server: RunningServer;
const quiet = createLogger({
  stream: { write: () => true } as unknown as NodeJS.WritableStream,
});

function configFile(name: string, contents: unknown): string {
  const file = path.join(folder, name);
  writeFileSync(file, JSON.stringify(contents));
  return file;
}

function configFor(flags: { config: string; databases: string[] }) {
  return loadConfig(
    { port: '0', ...flags },
    {
      DATABASE_URL: mainUrl,
      PGMCP_AUTH: 'none',
      // The test login is a superuser; these tests are about databases, not the login check.
      PGMCP_ALLOW_UNSAFE_LOGIN: '1',
    },
  );
}

beforeAll(async () => {
  folder = mkdtempSync(path.join(os.tmpdir(), 'pgmcp-databases-'));
  mainUrl = await recreateDatabase(testDatabaseUrl(), 'pgmcp_multi_main');
  hrUrl = await recreateDatabase(testDatabaseUrl(), 'pgmcp_multi_hr');
  await migrateDatabase(mainUrl);
  await migrateDatabase(hrUrl, async (admin) => {
    await admin.query(`
      create schema people;
      comment on schema people is 'Who works here.';
      create table people.staff (id int primary key, name text not null);
      insert into people.staff values (1, 'Ada'), (2, 'Grace');
      select pgmcp.expose_table('people.staff');
    `);
  });
  hr = new pg.Client({ connectionString: hrUrl });
  await hr.connect();
  const config = configFor({
    config: configFile('pgmcp.json', {
      catalog: { excludeSchemas: ['public'] },
      collections: [
        { database: 'hr', schema: 'people', table: 'staff', list: true },
      ],
    }),
    databases: [`hr=${hrUrl}`],
  });
  server = await startServer(config, quiet);
});

afterAll(async () => {
  await server?.stop();
  await hr?.end();
  rmSync(folder, { recursive: true, force: true });
});

describe('several databases', () => {
  it('lists each database’s catalog under its own authority, then its collections', async () => {
    const { uris } = await walkList(server.url as string);
    const pg = uris.filter((uri) => uri.startsWith('pg://'));
    expect(pg).toEqual([
      'pg://hr/people',
      'pg://hr/people/staff',
      'pg://hr/people/staff/rows/1',
      'pg://hr/people/staff/rows/2',
    ]);
  });

  it('reads tables and rows of the second database by its configured name', async () => {
    const table = await call(server.url as string, 'resources/read', {
      uri: 'pg://hr/people/staff',
    });
    const description = (table.result?.['contents'] as { text: string }[])[0]
      ?.text;
    expect(description).toContain('Database `hr`, schema `people`');
    const row = await call(server.url as string, 'resources/read', {
      uri: 'pg://hr/people/staff/rows/2',
    });
    expect(
      JSON.parse(
        (row.result?.['contents'] as { text: string }[])[0]?.text ?? '',
      ),
    ).toEqual({ id: 2, name: 'Grace' });
    // The database's own name is not an authority here, nor is an unknown one.
    for (const uri of [
      'pg://pgmcp_multi_hr/people/staff',
      'pg://nowhere/people/staff',
    ]) {
      const missing = await call(server.url as string, 'resources/read', {
        uri,
      });
      expect(missing.error).toMatchObject({ code: -32602 });
    }
  });

  it('delivers the second database’s row and schema changes through its own feed', async () => {
    const row = 'pg://hr/people/staff/rows/1';
    const table = 'pg://hr/people/staff';
    const stream = await listen(server.url as string, {
      resourcesListChanged: true,
      resourceSubscriptions: [row, table],
    });
    try {
      await stream.waitFor((messages) => messages.length >= 1);
      await hr.query(`update people.staff set name = 'Ada L.' where id = 1`);
      await stream.waitFor(() => stream.updated().includes(row));
      await hr.query(`alter table people.staff add column team text`);
      await stream.waitFor(
        () => stream.updated().includes(table) && stream.listChanges() >= 1,
      );
    } finally {
      stream.close();
    }
  });

  it('refuses at start-up a collection whose table is missing or has no key or a searchable column, and a name used twice', async () => {
    const attempts: [string, { config: string; databases: string[] }][] = [
      [
        '"searchable" names "nickname", which the table does not have',
        {
          config: configFile('searchable.json', {
            collections: [
              {
                database: 'hr',
                schema: 'people',
                table: 'staff',
                searchable: ['name', 'nickname'],
              },
            ],
          }),
          databases: [`hr=${hrUrl}`],
        },
      ],
      [
        'no such table',
        {
          config: configFile('missing.json', {
            collections: [{ database: 'hr', schema: 'people', table: 'nope' }],
          }),
          databases: [`hr=${hrUrl}`],
        },
      ],
      [
        'two databases are named pgmcp_multi_main',
        {
          config: configFile('empty.json', {}),
          databases: [`pgmcp_multi_main=${hrUrl}`],
        },
      ],
    ];
    for (const [message, flags] of attempts) {
      const failed = startServer(configFor(flags), quiet);
      await expect(failed).rejects.toBeInstanceOf(ConfigError);
      await expect(failed).rejects.toThrow(message);
    }
    await hr.query('create table people.keyless (v text)');
    const keyless = startServer(
      configFor({
        config: configFile('keyless.json', {
          collections: [{ database: 'hr', schema: 'people', table: 'keyless' }],
        }),
        databases: [`hr=${hrUrl}`],
      }),
      quiet,
    );
    await expect(keyless).rejects.toThrow('has no primary key');
  });
});

describe('sensitive entries fail closed (issue 32 point 2)', () => {
  it('refuses at start-up an entry naming no served database, schema, table or column, saying which and how to fix it', async () => {
    const attempts: [string, unknown][] = [
      [
        'names database payroll, which this server does not serve',
        { database: 'payroll', schema: 'people', table: 'staff' },
      ],
      [
        'names no existing schema peeple in database hr',
        { database: 'hr', schema: 'peeple', table: 'staff' },
      ],
      [
        'names no existing table people.staf in database hr',
        { database: 'hr', schema: 'people', table: 'staf' },
      ],
      [
        'names no existing column salary of people.staff in database hr',
        {
          database: 'hr',
          schema: 'people',
          table: 'staff',
          columns: ['name', 'salary'],
        },
      ],
      [
        'names no existing table pgmcp.nothing in database pgmcp_multi_main',
        { schema: 'pgmcp', table: 'nothing' },
      ],
    ];
    for (const [message, entry] of attempts) {
      const failed = startServer(
        configFor({
          config: configFile('sensitive.json', { sensitive: [entry] }),
          databases: [`hr=${hrUrl}`],
        }),
        quiet,
      );
      await expect(failed).rejects.toBeInstanceOf(ConfigError);
      await expect(failed).rejects.toThrow(message);
      await expect(failed).rejects.toThrow('remove the entry');
    }
  });

  it('starts with entries naming the main database by omission or by its own name, and another by its --database name', async () => {
    const started = await startServer(
      configFor({
        config: configFile('sensitive-ok.json', {
          sensitive: [
            { schema: 'pgmcp', table: 'resources', columns: ['text'] },
            { database: 'pgmcp_multi_main', schema: 'pgmcp', table: 'audit' },
            { database: 'hr', schema: 'people', table: 'staff' },
          ],
        }),
        databases: [`hr=${hrUrl}`],
      }),
      quiet,
    );
    try {
      // The entry naming the main database by its name holds: query asks before reading it.
      const { result } = await call(started.url as string, 'tools/call', {
        _meta: ELICITATION,
        name: 'query',
        arguments: { sql: 'select count(*) from pgmcp.audit' },
      });
      expect(result).toMatchObject({ resultType: 'input_required' });
    } finally {
      await started.stop();
    }
  });
});

describe('the config file and --database', () => {
  it('are validated at start-up with messages that name the problem', () => {
    folder ??= mkdtempSync(path.join(os.tmpdir(), 'pgmcp-databases-'));
    const cases: [string, () => unknown, string | RegExp][] = [
      [
        'not JSON',
        () => {
          const file = path.join(folder, 'broken.json');
          writeFileSync(file, '{ "collections": [ ');
          return configFor({ config: file, databases: [] });
        },
        /is not valid JSON/,
      ],
      [
        'unknown key',
        () =>
          configFor({
            config: configFile('typo.json', { colections: [] }),
            databases: [],
          }),
        /invalid config file .*typo\.json/s,
      ],
      [
        'a collection in an unknown database',
        () =>
          configFor({
            config: configFile('unknown-db.json', {
              collections: [{ database: 'crm', schema: 's', table: 't' }],
            }),
            databases: [],
          }),
        /names database "crm"/,
      ],
      [
        'missing file',
        () =>
          configFor({
            config: path.join(folder, 'absent.json'),
            databases: [],
          }),
        /cannot read the config file .*ENOENT/,
      ],
      [
        'bad --database',
        () =>
          configFor({
            config: configFile('ok.json', {}),
            databases: ['hr postgres://secret@host/db'],
          }),
        /--database .* takes name=postgres:/,
      ],
    ];
    for (const [label, attempt, message] of cases) {
      expect(attempt, label).toThrow(ConfigError);
      expect(attempt, label).toThrow(message);
    }
  });
});
