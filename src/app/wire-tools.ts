// The tools feature wired (issue 15): search, fetch, query and explain with their guard, limits
// and consent, the extension's tools after them, minus those the config file switches off.
import { ProtocolError } from '../errors.js';
import {
  KeptResult,
  StreamingResult,
  type ConsentCheck,
  type MethodHandler,
  type ReadResourceParams,
} from '../protocol/index.js';
import { catalogUri, type ConsentGate } from '../resources/index.js';
import {
  createExplainTool,
  createFetchTool,
  createQueryTool,
  createSearchTool,
  createSqlGuard,
  limitToolCalls,
  SQL_GUARD_DEFAULTS,
  ToolCallLimiter,
  type ReadResource,
  type SqlToolDependencies,
  type Tool,
} from '../tools/index.js';
import type { Config } from '../config/index.js';
import type { AppOptions } from './app-options.js';
import { searchableCollections } from './searchable-collections.js';

/** The query bounds without settings (the defaults of config/environment.ts). */
const DEFAULT_QUERY: Config['query'] = {
  maxBytes: 24_576,
  maxCost: 1e9,
  tempFileLimitKb: 1_048_576,
  auditTextBytes: 4096,
};

/** The tool settings without a config file. */
const DEFAULT_TOOLS: Config['tools'] = {
  disabled: [],
  schemas: null,
  explainAnalyze: false,
  searchLimit: 20,
};

/**
 * fetch (tools/) reads through resources/read's own method, so consent and errors are the same.
 */
export function readThrough(
  readMethod: MethodHandler<ReadResourceParams>,
): ReadResource {
  return async (uri, ctx, input) => {
    const result = await readMethod.handle(
      {
        uri,
        inputResponses: input?.inputResponses,
        requestState: input?.requestState,
      },
      ctx,
    );
    // resources/read never streams nor keeps its answers; the checks keep the types honest.
    if (result instanceof KeptResult) return result.payload;
    if (!(result instanceof StreamingResult)) return result;
    result.stream.cancel();
    throw new ProtocolError('INTERNAL', 'A read produced a stream.');
  };
}

/** What query and explain share: the database, their bounds, the statement guard and consent. */
function sqlToolDependencies(
  options: AppOptions,
  askConsent: ConsentCheck,
): SqlToolDependencies {
  const settings = options.tools ?? DEFAULT_TOOLS;
  const main = options.sources[0];
  return {
    db: options.db,
    schemas: settings.schemas,
    auditRetentionSeconds: options.live.auditRetentionSeconds,
    limits: options.query ?? DEFAULT_QUERY,
    log: (line: string) => options.logger.warn(line),
    guard: createSqlGuard({
      db: options.db,
      cacheMs: settings.guardCacheMs ?? SQL_GUARD_DEFAULTS.cacheMs,
      maxFunctions:
        settings.guardMaxFunctions ?? SQL_GUARD_DEFAULTS.maxFunctions,
      // The settings pgmcp sets per request (db/ad-hoc-sql.ts): the role is refused anyway.
      perRequestSettings: [
        'request.jwt.claims',
        ...(settings.schemas === null ? [] : ['search_path']),
      ],
    }),
    // query runs in the main database: the tables marked sensitive there ask for consent.
    consent: {
      tables: (main?.sensitive ?? []).filter(
        (table) =>
          table.database === undefined || table.database === main?.name,
      ),
      check: askConsent,
    },
  };
}

/** The tools served (issue 15), minus those the config file switches off. */
export function serverTools(
  options: AppOptions,
  deps: { read: ReadResource; consent: ConsentGate },
): Tool[] {
  const settings = options.tools ?? DEFAULT_TOOLS;
  const main = options.sources[0];
  const askConsent: ConsentCheck = (ctx, target, input) =>
    deps.consent.check(ctx, { method: 'tools/call', target }, input);
  const sql = sqlToolDependencies(options, askConsent);
  // One limiter for both SQL tools: their calls count together.
  const limiter =
    options.toolLimits === undefined
      ? undefined
      : new ToolCallLimiter(options.toolLimits);
  const limited = <TArgs>(tool: Tool<TArgs>): Tool<TArgs> =>
    limiter === undefined ? tool : limitToolCalls(tool, limiter);
  const tools: Tool[] = [
    ...(main === undefined
      ? []
      : [
          createSearchTool({
            db: options.db,
            relationUri: (schema, relation) =>
              catalogUri({ database: main.name, schema, relation }),
            scope: main.scope,
            limit: settings.searchLimit,
            collections: searchableCollections(options.sources),
          }),
        ]),
    createFetchTool(deps.read),
    limited(createQueryTool(sql)),
    limited(
      createExplainTool({ ...sql, analyzeAllowed: settings.explainAnalyze }),
    ),
  ];
  tools.push(
    ...(options.extension?.tools?.({
      db: options.db,
      cursorSecrets: options.cursorSecrets,
    }) ?? []),
  );
  return tools.filter((tool) => !settings.disabled.includes(tool.name));
}
