// The change path wired (notifications/ startChangePath): every source's change log into the
// streams, with what resources/ and prompts/ make of a logged change.
import {
  startChangePath,
  type ChangeFeed,
  type ChangePathOptions,
  type ListenChannel,
  type StreamRegistry,
} from '../notifications/index.js';
import { PROMPTS_RELATION, promptChange } from '../prompts/index.js';
import { deliveredChanges, type CatalogSource } from '../resources/index.js';
import type { AppOptions } from './app-options.js';
import type { PromptFeature } from './wire-prompts.js';

/**
 * How a test or the server tunes the path: its poll interval, where it logs, and whether (and how
 * patiently) it shares delivery decisions with other replicas.
 */
export type ChangePathTuning = Partial<
  Pick<
    ChangePathOptions<CatalogSource>,
    'pollIntervalMs' | 'log' | 'shareDecisions' | 'leaderLagMs'
  >
>;

/** Start reading every source's change log into `streams`. */
export async function wireChangePath(
  options: AppOptions,
  parts: {
    readonly streams: StreamRegistry;
    readonly prompts: PromptFeature;
    /** The eras' channels on the main database's listener (app/era-wiring.ts). */
    readonly channels: readonly ListenChannel[];
  },
  tuning: ChangePathTuning | undefined,
): Promise<ChangeFeed> {
  const promptPages = parts.prompts.pages;
  const feed = await startChangePath({
    sources: options.sources,
    streams: parts.streams,
    // Prompts live in the main database (sources[0]); its log's prompt rows are theirs.
    deliveredChanges: (source, change) => {
      if (source !== options.sources[0] || change.relation !== PROMPTS_RELATION)
        return deliveredChanges(source, change);
      promptPages.clear();
      return [promptChange(change)];
    },
    forgetCatalog: (source) => {
      promptPages.clear();
      forgetCatalog(source, options.roleDecisions);
    },
    retentionSeconds: options.live.changeRetentionSeconds,
    log: tuning?.log ?? ((line) => options.logger.info(line)),
    // Issue 35: failures at warn (a test's own `log` hears both).
    warn: tuning?.log ?? ((line) => options.logger.warn(line)),
    pollIntervalMs: tuning?.pollIntervalMs,
    channels: parts.channels,
    shareDecisions:
      tuning?.shareDecisions ?? options.live.sharedDelivery === 'on',
    leaderLagMs: tuning?.leaderLagMs,
  });
  promptPages.start();
  for (const source of options.sources) source.navigators.start();
  return feed;
}

/**
 * A schema change (DDL, GRANT, REVOKE) or a resync may change whose catalog has entries, and
 * often comes with a role's setup or removal (role DDL itself reaches no feed): forget both.
 */
function forgetCatalog(
  source: CatalogSource,
  roleDecisions: AppOptions['roleDecisions'],
): void {
  source.lookahead.clear();
  source.navigators.clear();
  roleDecisions?.clear();
}
