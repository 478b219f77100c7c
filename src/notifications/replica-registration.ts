// Each replica lists the roles its listen streams run as (pgmcp.feed_replicas), so the feed leader
// decides for them too (shared-delivery.ts).
import {
  registerFeedReplica,
  unregisterFeedReplica,
  type DatabaseHandle,
} from '../db/index.js';
import type { StreamRegistry } from './stream-registry.js';

/** How often a replica checks its roles, and the leader re-reads every replica's. */
export const REFRESH_MS = 1000;
/** How often a replica lists its roles when they have not changed, as a sign of life. */
const HEARTBEAT_MS = 5000;

export interface RegistrationOptions {
  readonly db: DatabaseHandle;
  readonly streams: StreamRegistry;
  readonly log: (line: string) => void;
  readonly warn: (line: string) => void;
}

export interface Registration {
  stop(): Promise<void>;
}

/**
 * List this replica's roles in pgmcp.feed_replicas when they change, and every HEARTBEAT_MS as a
 * sign of life; taken off the list on stop.
 */
export function startRegistration(
  options: RegistrationOptions,
  replica: string,
): Registration {
  let listed: string | undefined;
  let listedAt = -Infinity;
  let failing = false;
  let writing: Promise<void> | undefined;
  const tick = (): void => {
    if (writing !== undefined) return;
    const principals = [...options.streams.principalsByRole().values()].map(
      (principal) => ({ role: principal.role, claims: principal.claims }),
    );
    const text = JSON.stringify(principals.map((p) => p.role).sort());
    const now = performance.now();
    if (text === listed && now - listedAt < HEARTBEAT_MS) return;
    writing = registerFeedReplica(options.db, { replica, principals })
      .then(() => {
        listed = text;
        listedAt = now;
        if (failing) options.log('live updates: listing this replica again');
        failing = false;
      })
      .catch((error: unknown) => {
        if (!failing)
          options.warn(
            `live updates: listing this replica's roles failed (${String(error)}); the others keep deciding for themselves`,
          );
        failing = true;
      })
      .finally(() => {
        writing = undefined;
      });
  };
  tick();
  const timer = setInterval(tick, REFRESH_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await writing;
      await unregisterFeedReplica(options.db, replica).catch(() => undefined);
    },
  };
}
