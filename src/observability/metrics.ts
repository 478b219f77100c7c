// The Prometheus metrics (issue 35): one registry, every metric defined here with bounded labels
// (no URIs, tokens or role names), and the exposition the admin listener serves.
import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics,
} from 'prom-client';

const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'pgmcp_' });
// prom-client names these gauges *_total, which Prometheus reserves for counters (promtool says so).
for (const name of ['active_handles', 'active_requests', 'active_resources'])
  registry.removeSingleMetric(`pgmcp_nodejs_${name}_total`);

/** Seconds buckets for request and transaction durations (OpenTelemetry MCP's advice, in seconds). */
const DURATION_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30,
  60, 120, 300,
];

/** What the collect callbacks read: pools, open sessions, the change log (registered by app/). */
interface Sources {
  readonly pools: Set<() => { total: number; idle: number; waiting: number }>;
  changeLogBytes: (() => Promise<number>) | undefined;
  legacySessions: (() => number) | undefined;
  openStreams: (() => { modern: number; legacy: number }) | undefined;
  queuedBytes: (() => number) | undefined;
}
const sources: Sources = {
  pools: new Set(),
  changeLogBytes: undefined,
  legacySessions: undefined,
  openStreams: undefined,
  queuedBytes: undefined,
};

/** The change log's size is read at most this often (a scrape never waits on more than one query). */
const CHANGE_LOG_CACHE_MS = 15_000;
let changeLogCache: { at: number; bytes: number } | undefined;

/** Every metric pgmcp records; docs/operations.md "Observing and draining" lists them. */
export const METRICS = {
  operationDuration: new Histogram({
    name: 'mcp_server_operation_duration_seconds',
    help: 'MCP request duration as the server saw it (OpenTelemetry mcp.server.operation.duration).',
    labelNames: [
      'mcp_method_name',
      'mcp_protocol_version',
      'outcome',
      'error_type',
    ] as const,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  }),
  poolConnections: new Gauge({
    name: 'pgmcp_pool_connections',
    help: 'Request pool connections by state (total, idle, waiting: requests queued for one).',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      let total = 0;
      let idle = 0;
      let waiting = 0;
      for (const read of sources.pools) {
        const stats = read();
        total += stats.total;
        idle += stats.idle;
        waiting += stats.waiting;
      }
      this.set({ state: 'total' }, total);
      this.set({ state: 'idle' }, idle);
      this.set({ state: 'waiting' }, waiting);
    },
  }),
  poolWait: new Histogram({
    name: 'pgmcp_pool_wait_seconds',
    help: 'Time a request waited for a pooled connection.',
    buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10],
    registers: [registry],
  }),
  poolExhaustions: new Counter({
    name: 'pgmcp_pool_exhaustions_total',
    help: 'Requests refused because no pooled connection came in time (POOL_EXHAUSTED).',
    registers: [registry],
  }),
  changeDelivery: new Histogram({
    name: 'pgmcp_change_delivery_seconds',
    help: 'From a change committing to its notification being queued on the streams.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  }),
  changes: new Counter({
    name: 'pgmcp_changes_total',
    help: 'Changes read from the change log.',
    registers: [registry],
  }),
  listenerReconnects: new Counter({
    name: 'pgmcp_listener_reconnects_total',
    help: 'Times the LISTEN connection was lost and reconnected.',
    registers: [registry],
  }),
  pollFallbacks: new Counter({
    name: 'pgmcp_change_poll_fallbacks_total',
    help: 'Safety-net polls of the change log that found changes no notification had announced.',
    registers: [registry],
  }),
  changeFeedFailures: new Counter({
    name: 'pgmcp_change_feed_failures_total',
    help: 'Failed reads or prunes of the change log, and listener errors.',
    registers: [registry],
  }),
  changeLogBytes: new Gauge({
    name: 'pgmcp_change_log_bytes',
    help: 'Size of pgmcp.changes on disk (read at most every 15 s).',
    registers: [registry],
    async collect() {
      const read = sources.changeLogBytes;
      if (read === undefined) return;
      const now = Date.now();
      if (
        changeLogCache === undefined ||
        now - changeLogCache.at > CHANGE_LOG_CACHE_MS
      )
        changeLogCache = {
          at: now,
          bytes: await read().catch(() => changeLogCache?.bytes ?? 0),
        };
      this.set(changeLogCache.bytes);
    },
  }),
  openStreams: new Gauge({
    name: 'pgmcp_open_streams',
    help: 'Open listen streams by protocol era.',
    labelNames: ['mcp_protocol_version'] as const,
    registers: [registry],
    collect() {
      const open = sources.openStreams?.();
      if (open === undefined) return;
      this.set({ mcp_protocol_version: '2026-07-28' }, open.modern);
      this.set({ mcp_protocol_version: '2025-11-25' }, open.legacy);
    },
  }),
  queuedBytes: new Gauge({
    name: 'pgmcp_stream_queued_bytes',
    help: 'Notification bytes queued on open streams, not yet written to their clients.',
    registers: [registry],
    collect() {
      const read = sources.queuedBytes;
      if (read !== undefined) this.set(read());
    },
  }),
  slowConsumersCut: new Counter({
    name: 'pgmcp_slow_consumers_cut_total',
    help: 'Streams ended because their client did not read (pending bytes or stall limit).',
    registers: [registry],
  }),
  cacheLookups: new Counter({
    name: 'pgmcp_cache_lookups_total',
    help: 'Token and role cache lookups by cache and result (hit, miss).',
    labelNames: ['cache', 'result'] as const,
    registers: [registry],
  }),
  toolCalls: new Counter({
    name: 'pgmcp_tool_calls_total',
    help: 'tools/call by tool and outcome (ok, tool_error, error).',
    labelNames: ['tool', 'outcome'] as const,
    registers: [registry],
  }),
  toolRows: new Counter({
    name: 'pgmcp_tool_rows_total',
    help: 'Rows returned by query, search and fetch calls.',
    labelNames: ['tool'] as const,
    registers: [registry],
  }),
  toolBytes: new Counter({
    name: 'pgmcp_tool_result_bytes_total',
    help: 'Bytes of tool results (their JSON text).',
    labelNames: ['tool'] as const,
    registers: [registry],
  }),
  auditWrites: new Counter({
    name: 'pgmcp_audit_writes_total',
    help: 'Audit rows (pgmcp.audit) by result (written, failed).',
    labelNames: ['result'] as const,
    registers: [registry],
  }),
  legacySessions: new Gauge({
    name: 'pgmcp_legacy_sessions',
    help: 'Open 2025-11-25 HTTP sessions held by this process.',
    registers: [registry],
    collect() {
      const read = sources.legacySessions;
      if (read !== undefined) this.set(read());
    },
  }),
  limitsHit: new Counter({
    name: 'pgmcp_limits_hit_total',
    help: 'Requests refused by a limit, by the limit (its error key).',
    labelNames: ['limit'] as const,
    registers: [registry],
  }),
  standbyReads: new Counter({
    name: 'pgmcp_standby_reads_total',
    help: 'Reads of databases with standbys, by the server that answered (standby, primary, none: refused) and why.',
    labelNames: ['server', 'reason'] as const,
    registers: [registry],
  }),
  standbyUp: new Gauge({
    name: 'pgmcp_standby_up',
    help: '1 while a standby (host:port) takes reads: reachable, in recovery and within the lag bounds; else 0.',
    labelNames: ['standby'] as const,
    registers: [registry],
  }),
  standbyLagBytes: new Gauge({
    name: 'pgmcp_standby_lag_bytes',
    help: "WAL bytes between the primary's position and a standby's replay position, at the last poll.",
    labelNames: ['standby'] as const,
    registers: [registry],
  }),
  standbyLagSeconds: new Gauge({
    name: 'pgmcp_standby_lag_seconds',
    help: 'How long a standby has been missing WAL the primary had, at the last poll.',
    labelNames: ['standby'] as const,
    registers: [registry],
  }),
  standbyTransitions: new Counter({
    name: 'pgmcp_standby_transitions_total',
    help: 'Changes of a standby state (up, lagging, down, promoted).',
    labelNames: ['standby', 'state'] as const,
    registers: [registry],
  }),
  primarySwitches: new Counter({
    name: 'pgmcp_primary_switches_total',
    help: 'Times a database with standbys moved its writes, LISTEN and slot to a promoted standby.',
    labelNames: ['database'] as const,
    registers: [registry],
  }),
  primaryCandidate: new Gauge({
    name: 'pgmcp_primary_candidate',
    help: "1 for the server (host:port) a database's writes go to, 0 for its other primary candidates.",
    labelNames: ['database', 'server'] as const,
    registers: [registry],
  }),
  walSlotRetainedBytes: new Gauge({
    name: 'pgmcp_wal_slot_retained_bytes',
    help: 'WAL the change source slot holds back (PGMCP_CHANGE_SOURCE=wal), by database.',
    labelNames: ['database'] as const,
    registers: [registry],
  }),
  walSlotWarnings: new Counter({
    name: 'pgmcp_wal_slot_warnings_total',
    help: 'Times the change source slot held more than half its limit (PGMCP_WAL_SLOT_MAX_BYTES).',
    registers: [registry],
  }),
  walSlotDrops: new Counter({
    name: 'pgmcp_wal_slot_drops_total',
    help: 'Change source slots dropped past their limit, or found lost and recreated.',
    registers: [registry],
  }),
  walResyncs: new Counter({
    name: 'pgmcp_wal_resyncs_total',
    help: 'Batches the WAL change source logged as a new capture epoch (every stream resyncs) instead of row by row, by reason.',
    labelNames: ['database', 'reason'] as const,
    registers: [registry],
  }),
  walTransactions: new Counter({
    name: 'pgmcp_wal_transactions_total',
    help: 'Decoded transactions with row changes the WAL change source logged.',
    registers: [registry],
  }),
  draining: new Gauge({
    name: 'pgmcp_draining',
    help: '1 while this process drains after SIGTERM, else 0.',
    registers: [registry],
  }),
};

/** A request pool's counts, read at scrape time until the returned function is called. */
export function observePool(
  read: () => { total: number; idle: number; waiting: number },
): () => void {
  sources.pools.add(read);
  return () => sources.pools.delete(read);
}

/** Which series these callbacks feed: registered by app/ for the stores it opened. */
export function observeSources(read: Partial<Omit<Sources, 'pools'>>): void {
  if (read.changeLogBytes !== undefined)
    sources.changeLogBytes = read.changeLogBytes;
  if (read.legacySessions !== undefined)
    sources.legacySessions = read.legacySessions;
  if (read.openStreams !== undefined) sources.openStreams = read.openStreams;
  if (read.queuedBytes !== undefined) sources.queuedBytes = read.queuedBytes;
}

/** Forget the pools and stores (the server that registered them stopped). */
export function forgetSources(): void {
  sources.changeLogBytes = undefined;
  sources.legacySessions = undefined;
  sources.openStreams = undefined;
  sources.queuedBytes = undefined;
  changeLogCache = undefined;
}

/** The Prometheus text exposition of every metric. */
export async function metricsExposition(): Promise<{
  contentType: string;
  body: string;
}> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}
