// completion/complete (spec §9) for resource-template arguments: suggest the values a variable
// takes in the stored resources the caller can read, matching what was typed and the arguments
// already chosen. A prompt reference goes to the prompts' completion that app/ hands in.
import { runRequestQuery, type DatabaseHandle } from '../db/index.js';
import { CATALOG_NAMES } from './statements/catalog-statements.js';
import { LIST_COLLECTION_ROWS } from './statements/row-statements.js';
import { TEMPLATE_COMPLETION_CANDIDATES } from './statements/completion-statements.js';
import type { Principal } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import {
  CompleteParamsSchema,
  createMethod,
  type CompleteParams,
  type MethodHandler,
  type RequestContext,
} from '../protocol/index.js';
import { parseUriTemplate, type UriTemplate } from './uri-template.js';
import { prefixUpperBound } from './uri.js';
import {
  findCollection,
  inScope,
  type CatalogSource,
} from './catalog-source.js';
import { encodeRowKey } from './catalog-uri.js';

/** At most this many values in one answer (the spec's cap). */
const MAX_VALUES = 100;
// Sorts after every stored URI in the C collation: a URI starts with its scheme's first letter
// (pgmcp.uri_is_valid), and "{" comes after every letter.
const AFTER_EVERY_URI = '{';
/** Stored URIs examined per completion: enough for distinct values, bounded on large tables. */
const MAX_CANDIDATES = 5000;
// Stands in for "from here on, unknown" when expanding the template to find the literal prefix.
const MARK = '\u0001';

export interface CompletionDependencies {
  readonly db: DatabaseHandle;
  /** The databases whose catalog and rows are pg:// resources (the first is `db`'s). */
  readonly sources: readonly CatalogSource[];
  /** ref/prompt: complete a stored prompt's argument (prompts/, wired by app/). */
  readonly completePrompt: (
    name: string,
    argument: Argument,
    ctx: RequestContext,
  ) => Promise<Record<string, unknown>>;
}

type Argument = { readonly name: string; readonly value: string };
type Chosen = Readonly<Record<string, string>>;
/** What is being completed: the argument, and the values of the others already chosen. */
interface Asked {
  readonly argument: Argument;
  readonly chosen: Chosen;
}
type CompletionRequest = {
  readonly principal: Principal;
  readonly aborted: boolean;
};

export function createCompleteMethod(
  deps: CompletionDependencies,
): MethodHandler<CompleteParams> {
  return createMethod({
    params: CompleteParamsSchema,
    async handle(params, ctx) {
      const { ref, argument } = params;
      if (ref.type === 'ref/prompt')
        return deps.completePrompt(ref.name, argument, ctx);
      const template = templateOf(ref.uri, argument.name);
      const chosen = params.context?.arguments ?? {};
      if (CATALOG_TEMPLATES.has(ref.uri))
        return completeCatalog(
          deps,
          { template: ref.uri, argument, chosen },
          ctx,
        );
      return completeStored(
        deps,
        { uri: ref.uri, template, argument, chosen },
        ctx,
      );
    },
  });
}

/** The parsed template, which must have the variable being completed; else invalid params. */
function templateOf(uri: string, variable: string): UriTemplate {
  let template: UriTemplate;
  try {
    template = parseUriTemplate(uri);
  } catch {
    throw invalidTemplate();
  }
  if (!template.variables.includes(variable))
    throw new ProtocolError(
      'INVALID_PARAMS',
      `Invalid params: the template has no variable ${JSON.stringify(variable.slice(0, 100))}.`,
    );
  return template;
}

/** Values of the argument in the stored URIs the role can read, agreeing with the arguments chosen. */
async function completeStored(
  deps: CompletionDependencies,
  {
    uri,
    template,
    argument,
    chosen,
  }: Asked & { readonly uri: string; readonly template: UriTemplate },
  ctx: CompletionRequest,
): Promise<Record<string, unknown>> {
  const from = literalPrefix(template, argument, chosen);
  const [row] = await runRequestQuery(
    { db: deps.db, principal: ctx.principal, cancellation: ctx },
    TEMPLATE_COMPLETION_CANDIDATES,
    {
      template: uri,
      from,
      to: from === '' ? AFTER_EVERY_URI : prefixUpperBound(from),
      limit: MAX_CANDIDATES,
    },
  );
  // A template the role cannot see is answered exactly like one that does not exist.
  if (row === undefined || !row.template_visible) throw invalidTemplate();
  return completionOf(
    matchingValues(row.uris, template, { argument, chosen }),
    argument.value,
    row.uris.length === MAX_CANDIDATES,
  );
}

/** The `variable` value of each URI the template matches whose other values agree with `chosen`. */
function matchingValues(
  uris: readonly string[],
  template: UriTemplate,
  { argument, chosen }: Asked,
): string[] {
  const variable = argument.name;
  const found: string[] = [];
  for (const uri of uris) {
    const values = template.match(uri);
    const value = values?.[variable];
    if (values === undefined || value === undefined) continue;
    const disagrees = Object.entries(chosen).some(
      ([name, wanted]) =>
        name !== variable &&
        values[name] !== undefined &&
        values[name] !== wanted,
    );
    if (!disagrees) found.push(value);
  }
  return found;
}

/** The catalog's templates (migrations/0005, 0006): completed from pg_catalog and the config. */
const ROW_TEMPLATE = 'pg://{database}/{schema}/{table}/rows/{key}';
const CATALOG_TEMPLATES = new Set([
  'pg://{database}/{schema}',
  'pg://{database}/{schema}/{table}',
  ROW_TEMPLATE,
]);
/** Rows examined when completing a row key. */
const MAX_ROW_CANDIDATES = 1000;

/**
 * Distinct values starting with `prefix`, sorted, as a completion; `capped`: the candidates were
 * cut short, so more may exist than were seen.
 */
function completionOf(
  candidates: Iterable<string>,
  prefix: string,
  capped = false,
) {
  const found = [...new Set(candidates)]
    .filter((value) => value.startsWith(prefix))
    .sort();
  return {
    completion: {
      values: found.slice(0, MAX_VALUES),
      total: found.length,
      hasMore: found.length > MAX_VALUES || capped,
    },
  };
}

/** No values (a fresh object each time: the answer is the caller's). */
function none(): Record<string, unknown> {
  return { completion: { values: [], total: 0, hasMore: false } };
}

/**
 * Schema and relation names the role can see (and the database's name), in the role's own
 * transaction; `table` needs the `schema` chosen in context.arguments.
 */
async function completeCatalog(
  deps: CompletionDependencies,
  { template, argument, chosen }: Asked & { readonly template: string },
  ctx: CompletionRequest,
): Promise<Record<string, unknown>> {
  // The template itself must be visible to the role, as for any other.
  const [row] = await runRequestQuery(
    { db: deps.db, principal: ctx.principal, cancellation: ctx },
    TEMPLATE_COMPLETION_CANDIDATES,
    { template, from: 'pg://', to: 'pg://', limit: 0 },
  );
  if (row === undefined || !row.template_visible) throw invalidTemplate();
  const rows = template === ROW_TEMPLATE;
  const sources = rows
    ? deps.sources.filter((source) => source.collections.length > 0)
    : deps.sources;
  if (argument.name === 'database')
    return completionOf(
      sources.map((source) => source.name),
      argument.value,
    );
  // Without a chosen database, the first (the one the server's own resources live in).
  const source =
    chosen['database'] === undefined
      ? sources[0]
      : sources.find((entry) => entry.name === chosen['database']);
  if (source === undefined) return none();
  return rows
    ? completeRowAddress(source, { argument, chosen }, ctx)
    : completeCatalogName(source, { argument, chosen }, ctx);
}

/** A row template's schema and table (the configured collections) or key (the first rows, by key). */
async function completeRowAddress(
  source: CatalogSource,
  { argument, chosen }: Asked,
  ctx: CompletionRequest,
): Promise<Record<string, unknown>> {
  const { collections } = source;
  const schema = chosen['schema'];
  if (argument.name === 'schema')
    return completionOf(
      collections.map((collection) => collection.schema),
      argument.value,
    );
  if (schema === undefined) return none();
  if (argument.name === 'table')
    return completionOf(
      collections
        .filter((collection) => collection.schema === schema)
        .map((collection) => collection.table),
      argument.value,
    );
  const table = chosen['table'];
  if (
    table === undefined ||
    findCollection(source, schema, table) === undefined
  )
    return none();
  // The first rows the role can see, by key: enough to pick from on a small table.
  const keys = await runRequestQuery(
    { db: source.db, principal: ctx.principal, cancellation: ctx },
    LIST_COLLECTION_ROWS,
    {
      schema,
      table,
      after: null,
      titleColumn: null,
      limit: MAX_ROW_CANDIDATES,
    },
  );
  return completionOf(
    keys.map((key) => encodeRowKey(key.key)),
    argument.value,
    keys.length === MAX_ROW_CANDIDATES,
  );
}

/** Schema names, or table and view names in the chosen schema, that the role can see (pg_catalog). */
async function completeCatalogName(
  source: CatalogSource,
  { argument, chosen }: Asked,
  ctx: CompletionRequest,
): Promise<Record<string, unknown>> {
  const schema = chosen['schema'];
  const kind = argument.name as 'schema' | 'table';
  if (
    kind === 'table' &&
    (schema === undefined || !inScope(source.scope, schema))
  )
    return none();
  const names = await runRequestQuery(
    { db: source.db, principal: ctx.principal, cancellation: ctx },
    CATALOG_NAMES,
    {
      kind,
      schema: schema ?? null,
      prefix: argument.value,
      limit: MAX_VALUES + 1,
      include: source.scope.include,
      exclude: source.scope.exclude,
    },
  );
  const values = names.slice(0, MAX_VALUES).map((name) => name.name);
  return {
    completion: {
      values,
      ...(names.length > MAX_VALUES ? {} : { total: values.length }),
      hasMore: names.length > MAX_VALUES,
    },
  };
}

function invalidTemplate(): ProtocolError {
  return new ProtocolError(
    'INVALID_PARAMS',
    'Invalid params: unknown resource template.',
  );
}

/**
 * The longest URI prefix every candidate must start with: the template expanded with the chosen
 * arguments up to the first variable that is neither chosen nor the one being completed, and,
 * when the completed variable comes first, with what was typed so far.
 */
function literalPrefix(
  template: UriTemplate,
  argument: Argument,
  chosen: Chosen,
): string {
  const values: Record<string, string | undefined> = {};
  for (const name of template.variables) {
    if (name === argument.name) {
      values[name] = argument.value + MARK;
      break;
    }
    const value = chosen[name];
    if (value === undefined) {
      values[name] = MARK;
      break;
    }
    values[name] = value;
  }
  const expanded = template.expand(values);
  const cut = expanded.indexOf('%01');
  return cut === -1 ? expanded : expanded.slice(0, cut);
}
