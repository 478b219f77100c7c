// A PostgreSQL restart under an open listen stream: the listener reconnects on its own, /readyz
// says so, and changes committed after the restart reach the stream. Runs its own embedded
// PostgreSQL (a restart of the shared test server would disturb every other file).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { expect, it } from 'vitest';
import {
  startEmbeddedPostgres,
  type EmbeddedPostgres,
} from '../../src/db/index.js';
import {
  freePort,
  listen,
  readiness,
  startTestServer,
  until,
  type TestServer,
} from '../setup/harness.js';
import { migrateDatabase } from '../setup/migrate-database.js';

it('reconnects after PostgreSQL restarts and delivers what commits afterwards', async () => {
  // The postgres OS user must reach the data folder: a fresh one under the system temp folder.
  const state = mkdtempSync(path.join(os.tmpdir(), 'pgmcp-restart-'));
  let postgres: EmbeddedPostgres | undefined;
  let server: TestServer | undefined;
  try {
    postgres = await startEmbeddedPostgres({
      stateDirectory: state,
      log: () => undefined,
      port: await freePort(),
    });
    const url = postgres.connectionString;
    await migrateDatabase(url, async (admin) => {
      await admin.query('create role pgmcp_restart_reader nologin');
      await admin.query(
        `insert into pgmcp.resources (uri, name, text, readers)
         values ('notes:///restart/one', 'one', 'v1', '{pgmcp_restart_reader}')`,
      );
    });

    server = await startTestServer({
      databaseUrl: url,
      principal: { role: 'pgmcp_restart_reader', claims: {} },
      live: {},
    });
    const stream = await listen(server.url, {
      resourceSubscriptions: ['notes:///restart/one'],
    });
    await stream.waitFor((messages) => messages.length === 1);
    expect(await readiness(server)).toBe(200);

    const port = postgres.port;
    await postgres.stop();
    await until(
      async () => (await readiness(server as TestServer)) === 503,
      15_000,
      '/readyz to report the lost listener',
    );
    postgres = await startEmbeddedPostgres({
      stateDirectory: state,
      log: () => undefined,
      port,
    });
    expect(postgres.port).toBe(port);
    await until(
      async () => (await readiness(server as TestServer)) === 200,
      20_000,
      '/readyz to report the listener back',
    );

    const writer = new pg.Client({ connectionString: url });
    await writer.connect();
    await writer.query(
      `update pgmcp.resources set text = 'v2' where uri = 'notes:///restart/one'`,
    );
    await writer.end();
    await stream.waitFor(
      () => stream.updated().includes('notes:///restart/one'),
      15_000,
    );
    expect(stream.updated()).toEqual(['notes:///restart/one']);
    stream.close();
  } finally {
    await server?.close();
    await postgres?.stop();
    rmSync(state, { recursive: true, force: true });
  }
}, 120_000);
