// What createApp is built from (create-app.ts): the open databases, the sources, the settings,
// and what a program embedding pgmcp adds.
import type { Config } from '../config/index.js';
import type { DatabaseHandle } from '../db/index.js';
import type { Logger } from '../log.js';
import type { GetPromptParams, MethodHandler } from '../protocol/index.js';
import type { PromptLimits } from '../prompts/index.js';
import type { CatalogSource } from '../resources/index.js';
import type { Tool, ToolLimits } from '../tools/index.js';

export interface AppOptions {
  readonly db: DatabaseHandle;
  /** Databases whose catalog and row collections are pg:// resources; the first is `db`'s. */
  readonly sources: readonly CatalogSource[];
  /** First signs cursors; all verify (rotation, replicas). */
  readonly cursorSecrets: readonly string[];
  readonly pageSize: number;
  readonly maxDirectoryEntries: number;
  readonly live: Config['live'];
  readonly logger: Logger;
  /**
   * Role decisions (db/ createRoleChecker, the one authentication uses), forgotten when a feed
   * reports a schema change or resyncs.
   */
  readonly roleDecisions?: { clear(): void };
  /**
   * Longest a role decision, or a prompts/list page kept for a role, stands
   * (PGMCP_ROLE_CACHE_MAX_AGE_SECONDS); default 10 s, 0: prompts/list pages are not kept.
   */
  readonly roleCacheMaxAgeMs?: number;
  /** How long a consent request's state stays good (PGMCP_CONSENT_MINUTES); default 10. */
  readonly consentMinutes?: number;
  /** Bounds on prompts/get arguments (PGMCP_PROMPT_MAX_*); the defaults when absent. */
  readonly promptLimits?: PromptLimits;
  /**
   * How long a 2025-11-25 request waits for the client's answer to elicitation/create or
   * sampling/createMessage; as long as the question's requestState is good (consentMinutes) when
   * absent.
   */
  readonly inputTimeoutMs?: number;
  /** The clock consents expire by (tests); Date.now by default. */
  readonly now?: () => number;
  /** Tool settings (config file "tools"); the defaults when absent. */
  readonly tools?: Config['tools'];
  /** Which OAuth scopes tools and method groups need (config file "scopes"); none when absent. */
  readonly scopes?: Config['scopes'];
  /** Tools and prompts added in code, never by configuration (the conformance runner's fixtures). */
  readonly extension?: AppExtension;
  /**
   * What query and explain calls one token, one role and all callers together may have in flight
   * (issue 32 point 4; serving.ts builds it from the settings); no limits when absent.
   */
  readonly toolLimits?: ToolLimits;
  /** Bounds on query and explain calls (PGMCP_QUERY_*); the defaults when absent. */
  readonly query?: Config['query'];
}

/**
 * What a program embedding pgmcp adds to the server: tools after the built-in ones, and prompts
 * answered by name before the stored ones.
 */
export interface AppExtension {
  readonly tools?: (deps: {
    readonly db: DatabaseHandle;
    readonly cursorSecrets: readonly string[];
  }) => Tool[];
  readonly prompts?: Readonly<
    Record<string, MethodHandler<GetPromptParams>['handle']>
  >;
}
