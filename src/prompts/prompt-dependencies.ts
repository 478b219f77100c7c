// What the prompt handlers need from the rest of the server, handed in by app/ (prompts/ sits
// beside resources/ and does not import it).
import type { DatabaseHandle } from '../db/index.js';
import type { ConsentCheck, RequestContext } from '../protocol/index.js';

export interface PromptDependencies {
  /** The main database: pgmcp.prompts, the stored resources and the catalog templates render. */
  readonly db: DatabaseHandle;
  /** The main database's catalog: its configured scope, and a table's pg:// description URI. */
  readonly catalog: {
    readonly include: readonly string[] | null;
    readonly exclude: readonly string[];
    tableUri(schema: string, relation: string): string;
  };
  /**
   * resources/read for `uri` as the caller: each content's JSON, none when it does not exist or
   * the role cannot read it, and whether it is sensitive (an invalid URI throws INVALID_URI).
   */
  readonly read: (
    uri: string,
    ctx: RequestContext,
  ) => Promise<{ contents: string[]; sensitive: boolean }>;
  /**
   * The consent gate (resources/ consent.ts) for a prompt that embeds a sensitive resource:
   * granted, or the input_required result asking the person (issue 17).
   */
  readonly consent: ConsentCheck;
  /** Bounds on what a prompts/get may ask for (issue 32 point 10). */
  readonly limits: PromptLimits;
}

/** Bounds on prompts/get arguments; past one, the call is -32602 before anything is read. */
export interface PromptLimits {
  /** Most arguments one call carries (PGMCP_PROMPT_MAX_ARGUMENTS). */
  readonly maxArguments: number;
  /** Longest argument value, in UTF-8 bytes (PGMCP_PROMPT_MAX_ARGUMENT_BYTES). */
  readonly maxArgumentBytes: number;
  /** Most table names a `tables` list of pgmcp:links may name (PGMCP_PROMPT_MAX_TABLES). */
  readonly maxTables: number;
}

/** The settings' defaults (docs/operations.md). */
export const DEFAULT_PROMPT_LIMITS: PromptLimits = Object.freeze({
  maxArguments: 32,
  maxArgumentBytes: 8192,
  maxTables: 20,
});

/** One stored argument (pgmcp.prompts.arguments; the migration's check keeps this shape). */
export interface StoredArgument {
  readonly name: string;
  readonly title?: string;
  readonly description?: string;
  readonly required?: boolean;
  /** What completion/complete suggests: readable tags, or visible tables. */
  readonly complete?: 'tags' | 'tables';
}
