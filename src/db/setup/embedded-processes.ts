// Processes of an embedded cluster: who runs in its data directory, whether a live pgmcp owns
// it, and how to clear an orphan left by a crashed run. Linux /proc based; elsewhere a no-op.
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  rmSync,
} from 'node:fs';
import path from 'node:path';

/** The OS user the embedded binaries run as (root runs them as "postgres"). */
export interface PostgresOsUser {
  readonly uid: number;
  readonly gid: number;
}

/**
 * A crashed earlier run can leave postgres running (re-parented) or a stale postmaster.pid.
 * Stop whatever still runs in this data directory, then remove the pid file.
 */
export function reclaimOrphan(
  dataDirectory: string,
  {
    pgCtl,
    user,
    log,
  }: {
    readonly pgCtl: string;
    readonly user: PostgresOsUser | undefined;
    readonly log: (line: string) => void;
  },
): void {
  const pidFile = path.join(dataDirectory, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const holders = processesIn(dataDirectory);
  const postmaster = Number(readFileSync(pidFile, 'utf8').split('\n', 1)[0]);
  if (holders.length > 0) {
    log('stopping an embedded PostgreSQL left running by an earlier pgmcp');
    if (holders.includes(postmaster)) {
      spawnSync(
        pgCtl,
        ['stop', '-D', dataDirectory, '-m', 'fast', '-w', '-t', '20'],
        {
          stdio: 'ignore',
          ...(user === undefined ? {} : { uid: user.uid, gid: user.gid }),
        },
      );
    }
    for (const pid of processesIn(dataDirectory)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    const deadline = Date.now() + 5_000;
    while (processesIn(dataDirectory).length > 0 && Date.now() < deadline) {
      spawnSync('sleep', ['0.1']);
    }
  }
  if (processesIn(dataDirectory).length === 0) rmSync(pidFile, { force: true });
}

/**
 * The cluster's postmaster when it is alive and its parent (the pgmcp that started it) is too.
 * An orphan, re-parented after its pgmcp crashed, has init (or a subreaper) as parent instead.
 */
export function runningOwner(
  dataDirectory: string,
): { ownerPid: number; port: number } | undefined {
  const pidFile = path.join(dataDirectory, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  const postmaster = Number(lines[0]);
  const port = Number(lines[3]);
  if (
    !Number.isInteger(postmaster) ||
    !Number.isInteger(port) ||
    !processesIn(dataDirectory).includes(postmaster)
  )
    return undefined;
  const parent = parentOf(postmaster);
  if (parent === undefined || parent <= 1) return undefined;
  const command = readProc(`/proc/${parent}/cmdline`).replace(/\0/g, ' ');
  return command.includes('pgmcp') ? { ownerPid: parent, port } : undefined;
}

function parentOf(pid: number): number | undefined {
  // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces, so read after the last ")".
  const stat = readProc(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const parent = Number(fields[1]);
  return Number.isInteger(parent) ? parent : undefined;
}

function readProc(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** Live processes whose working directory is the data directory (postgres and its backends). */
function processesIn(dataDirectory: string): number[] {
  if (!existsSync('/proc')) return [];
  let target: string;
  try {
    target = realpathSync(dataDirectory);
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/cwd`) === target)
        pids.push(Number(entry));
    } catch {
      // not ours to read, or exited
    }
  }
  return pids;
}
