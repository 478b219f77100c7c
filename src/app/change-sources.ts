// Issue 36 point 2: where each served database's row changes come from (PGMCP_CHANGE_SOURCE):
// capture triggers, or the WAL read by one replica at a time into the same change log.
import type { Config } from '../config/index.js';
import {
  startWalCapture,
  useTriggerSource,
  type DatabaseHandle,
  type WalCapture,
} from '../db/index.js';
import { ConfigError } from '../errors.js';
import type { Logger } from '../log.js';

/** The databases whose sources start: the main one (its administrative login) and each --database. */
export interface CaptureTargets {
  readonly main: DatabaseHandle;
  readonly more: readonly {
    readonly name: string;
    readonly db: DatabaseHandle;
  }[];
}

/**
 * Put each database on its configured source; the WAL readers started are pushed onto `captures`
 * (the caller stops them). Under "triggers" a database's exposed tables keep (or get back) their
 * capture triggers.
 */
export async function startChangeSources(
  config: Config,
  targets: CaptureTargets,
  { captures, logger }: { captures: WalCapture[]; logger: Logger },
): Promise<void> {
  const { changeCapture } = config;
  const all = [{ name: 'main', db: targets.main }, ...targets.more];
  for (const name of Object.keys(changeCapture.source.databases))
    if (!all.some((target) => target.name === name))
      throw new ConfigError(
        `PGMCP_CHANGE_SOURCE names database ${name}, which this server does not serve: use main for the main database, or a name given with --database.`,
      );
  for (const { name, db } of all) {
    const source =
      changeCapture.source.databases[name] ?? changeCapture.source.default;
    if (source === 'triggers') {
      await useTriggerSource(db, (line) => logger.info(line));
      continue;
    }
    const capture = await startWalCapture({
      db,
      name,
      slotMaxBytes: changeCapture.slotMaxBytes,
      maxTransactionRows: changeCapture.maxTransactionRows,
      maxPendingRows: changeCapture.maxPendingRows,
      log: (line) => logger.info(line),
      warn: (line) => logger.warn(line),
    });
    captures.push(capture);
    logger.info(
      `live updates: ${name} changes come from the WAL (slot ${capture.slot}, publication pgmcp_changes)`,
    );
  }
}
