// The application_name each of pgmcp's connections reports, telling replicas and pools apart in
// pg_stat_activity and log_line_prefix's %a (issue 34 point 4).
import os from 'node:os';

/** PostgreSQL keeps the first NAMEDATALEN - 1 (63) bytes of application_name. */
const MAX_BYTES = 63;

/**
 * This process's name among replicas: the Kubernetes downward API's POD_NAME when set, else the
 * host name (a pod's, in Kubernetes), then the process id. Only printable ASCII survives
 * PostgreSQL (it turns the rest into `?`), so anything else in the host name becomes `-`.
 */
export function replicaName(
  host: string = process.env['POD_NAME'] || os.hostname(),
  pid: number = process.pid,
): string {
  const safeHost = host.replace(/[^\w.-]/g, '-') || 'unknown';
  return `${safeHost}/${pid}`;
}

/**
 * `<purpose>/<host>/<pid>`, e.g. `pgmcp-feed/api-7c9d5/4711`, within PostgreSQL's 63 bytes: a
 * long host name is cut from its start, so the process id and the purpose always survive. It is
 * given to pg as `fallback_application_name`, so a user's own `application_name` (in the
 * connection URL, or PGAPPNAME) wins, as it does in libpq.
 */
export function replicaApplicationName(
  purpose: string,
  replica: string = replicaName(),
): string {
  const room = MAX_BYTES - purpose.length - 1;
  const tail = replica.length > room ? replica.slice(-room) : replica;
  return `${purpose}/${tail}`;
}
