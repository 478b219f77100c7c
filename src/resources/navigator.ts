// The navigator (pg://{database}): a compact overview of what the role may see of a database,
// kept under a byte budget whatever the catalog's size, saying what it left out and where to find it.
import type { Principal } from '../auth/index.js';
import { runRequestQuery } from '../db/index.js';
import {
  NAVIGATOR,
  type NavigatorFacts,
  type NavigatorGroup,
  type NavigatorSchema,
} from './statements/navigator-statements.js';
import { catalogUri, databaseUri } from './catalog-uri.js';
import { dataBlock, DATA_NOTICE } from './data-block.js';
import type { CatalogSource } from './catalog-source.js';

/** The navigator's budget when the config file sets none (catalog.navigatorBytes). */
export const DEFAULT_NAVIGATOR_BYTES = 16 * 1024;

/** Room kept for the closing lines (what was left out, where to find it). */
const FOOTER_BYTES = 600;
/** The smallest a schema's heading or a group's line can be: bounds how many the statement returns. */
const SMALLEST_LINE_BYTES = 40;

/** What the navigator shows of one schema: its heading and the groups that fitted. */
interface ShownSchema {
  readonly schema: NavigatorSchema;
  readonly groups: NavigatorGroup[];
}

/**
 * The navigator's contents JSON (one content) for `source` as the role sees it, in Markdown or
 * JSON, at most `budget` bytes of text. Asking the catalog costs a scan of pg_class with a
 * privilege check per relation, so the answer is kept per role and format (source.navigators)
 * until the feed reports a schema change, or for at most LOOKAHEAD_TTL_MS.
 */
export async function readNavigator(
  source: CatalogSource,
  request: {
    readonly principal: Principal;
    readonly cancellation: { readonly aborted: boolean };
  },
  format: 'markdown' | 'json',
): Promise<string[]> {
  const role = request.principal.role;
  const kept = source.navigators.get(role, format);
  if (kept !== undefined) return [kept];
  const generation = source.navigators.generation;
  const contents = await renderNavigator(source, request, format);
  if (contents[0] !== undefined)
    source.navigators.set(role, format, {
      page: contents[0],
      generation,
    });
  return contents;
}

/** Ask the catalog as the role and write the navigator within its budget. */
async function renderNavigator(
  source: CatalogSource,
  request: {
    readonly principal: Principal;
    readonly cancellation: { readonly aborted: boolean };
  },
  format: 'markdown' | 'json',
): Promise<string[]> {
  const budget = source.scope.navigatorBytes ?? DEFAULT_NAVIGATOR_BYTES;
  const lines = Math.floor(budget / SMALLEST_LINE_BYTES);
  const [row] = await runRequestQuery(
    {
      db: source.db,
      principal: request.principal,
      cancellation: request.cancellation,
    },
    NAVIGATOR,
    {
      database: source.databaseName,
      include: source.scope.include,
      exclude: source.scope.exclude,
      maxSchemas: lines,
      maxLines: lines,
    },
  );
  if (row === undefined) return [];
  const facts = JSON.parse(row.facts) as NavigatorFacts;
  const uri = databaseUri(source.name, format === 'json' ? { format } : {});
  const render = format === 'json' ? jsonRendering : markdownRendering;
  const rendering = render(source.name);
  const shown = fit(facts, budget - FOOTER_BYTES, rendering);
  let text = rendering.document(facts, shown, budget);
  // fit() sizes the parts; a longer fence or the footer's figures may still tip the whole over.
  while (bytes(text) > budget && shown.length > 0) {
    const last = shown.at(-1) as ShownSchema;
    if (last.groups.pop() === undefined) shown.pop();
    text = rendering.document(facts, shown, budget);
  }
  return [
    JSON.stringify({
      uri,
      mimeType: format === 'json' ? 'application/json' : 'text/markdown',
      text,
    }),
  ];
}

/** How one format sizes and writes the navigator's parts. */
interface Rendering {
  header(facts: NavigatorFacts): string;
  schema(schema: NavigatorSchema): string;
  group(group: NavigatorGroup, schema: string): string;
  document(
    facts: NavigatorFacts,
    shown: readonly ShownSchema[],
    budget: number,
  ): string;
}

const bytes = (text: string): number => Buffer.byteLength(text, 'utf8');

/**
 * What fits in `room` bytes: schema headings in order of importance while they take at most half
 * the room, then groups round-robin (each schema's most important first, then each one's second,
 * …), so every shown schema gets its most important tables before any gets its tenth.
 */
function fit(
  facts: NavigatorFacts,
  room: number,
  render: Rendering,
): ShownSchema[] {
  let used = bytes(render.header(facts));
  const shown: ShownSchema[] = [];
  for (const schema of facts.schemas) {
    const size = bytes(render.schema(schema));
    if (used + size > room / 2 && shown.length > 0) break;
    used += size;
    shown.push({ schema, groups: [] });
  }
  const full = new Set<ShownSchema>();
  for (let rank = 0; full.size < shown.length; rank += 1)
    for (const entry of shown) {
      if (full.has(entry)) continue;
      const group = entry.schema.groups[rank];
      const size =
        group === undefined ? 0 : bytes(render.group(group, entry.schema.name));
      if (group === undefined || used + size > room) {
        full.add(entry);
        continue;
      }
      used += size;
      entry.groups.push(group);
    }
  return shown;
}

/** How much was left out: schemas, and relations of the shown schemas not in a shown group. */
function leftOut(facts: NavigatorFacts, shown: readonly ShownSchema[]) {
  const schemas = facts.schemaCount - shown.length;
  const inShown = shown.reduce((sum, entry) => sum + entry.schema.relations, 0);
  const listed = shown.reduce(
    (sum, entry) =>
      sum + entry.groups.reduce((count, group) => count + group.members, 0),
    0,
  );
  return {
    schemas,
    relationsOfSchemas: facts.relationCount - inShown,
    relations: inShown - listed,
  };
}

const rowsText = (group: NavigatorGroup): string[] =>
  group.approximateRows === null ? [] : [`~${group.approximateRows} rows`];

function markdownRendering(database: string): Rendering {
  const rendering: Rendering = {
    header: (facts) =>
      [
        `# Database ${database}`,
        '',
        `You can see ${facts.schemaCount} schemas holding ${facts.relationCount} tables and views. Below: each schema with its most important tables (most foreign keys, then most rows); look-alike tables are counted once, as "N like NAME".`,
        `Read a schema for all of its tables: ${databaseUri(database)}/{schema}; a table for its columns, keys, join conditions and values: ${databaseUri(database)}/{schema}/{table}.`,
        DATA_NOTICE,
        '',
      ].join('\n'),
    // The heading, the comment and the fences around the block.
    schema: (schema) =>
      `\n## ${schema.name}: ${schema.relations} tables and views, ${catalogUri({ database, schema: schema.name })}\n\n~~~text\n${schema.comment === null ? '' : `${oneLine(schema.comment)}\n`}~~~\n`,
    group: (group) => {
      const name =
        group.members === 1
          ? group.name
          : `${group.name} and ${group.members - 1} more like ${group.pattern} (# a digit)`;
      const facts = [
        group.kind,
        ...rowsText(group),
        ...(group.key === null ? [] : [`key (${group.key.join(', ')})`]),
        ...(group.degree === 0
          ? []
          : [`${group.degree} foreign key${group.degree === 1 ? '' : 's'}`]),
      ];
      const comment =
        group.comment === null ? '' : `: ${oneLine(group.comment)}`;
      return `${name} (${facts.join(', ')})${comment}\n`;
    },
    document(facts, shown, budget) {
      let text = rendering.header(facts);
      for (const { schema, groups } of shown) {
        text += `\n## ${schema.name}: ${schema.relations} tables and views, ${catalogUri({ database, schema: schema.name })}\n\n`;
        const body = [
          ...(schema.comment === null ? [] : [oneLine(schema.comment)]),
          ...groups.map((group) =>
            rendering.group(group, schema.name).trimEnd(),
          ),
        ];
        if (body.length > 0) text += dataBlock(body.join('\n'));
      }
      const out = leftOut(facts, shown);
      if (out.schemas + out.relations > 0)
        text += `\nLeft out to stay under ${budget} bytes: ${out.schemas} schemas (${out.relationsOfSchemas} tables and views) and ${out.relations} tables and views of the schemas above. Read ${databaseUri(database)}/{schema} for a schema's tables (long schemas continue at the ?after= link they end with); resources/list lists every schema and table, and completion/complete completes their names.\n`;
      return text;
    },
  };
  return rendering;
}

function jsonRendering(database: string): Rendering {
  const group = (entry: NavigatorGroup, schema: string) => ({
    name: entry.name,
    uri: catalogUri({ database, schema, relation: entry.name }),
    kind: entry.kind,
    approximateRows: entry.approximateRows,
    key: entry.key,
    foreignKeys: entry.degree,
    comment: entry.comment,
    ...(entry.members === 1
      ? {}
      : { alike: { count: entry.members, pattern: entry.pattern } }),
  });
  return {
    header: (facts) =>
      JSON.stringify({
        database,
        schemaCount: facts.schemaCount,
        relationCount: facts.relationCount,
      }),
    schema: (schema) =>
      JSON.stringify({
        name: schema.name,
        uri: catalogUri({ database, schema: schema.name }),
        comment: schema.comment,
        relations: schema.relations,
        tables: [],
      }),
    group: (entry, schema) => `${JSON.stringify(group(entry, schema))},`,
    document(facts, shown, budget) {
      const out = leftOut(facts, shown);
      return JSON.stringify({
        database,
        schemaCount: facts.schemaCount,
        relationCount: facts.relationCount,
        schemas: shown.map(({ schema, groups }) => ({
          name: schema.name,
          uri: catalogUri({ database, schema: schema.name }),
          comment: schema.comment,
          relations: schema.relations,
          tables: groups.map((entry) => group(entry, schema.name)),
        })),
        leftOut: {
          budgetBytes: budget,
          schemas: out.schemas,
          relationsOfLeftOutSchemas: out.relationsOfSchemas,
          relationsOfShownSchemas: out.relations,
        },
      });
    },
  };
}

/** Text on one line: line breaks flattened. */
function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ');
}
