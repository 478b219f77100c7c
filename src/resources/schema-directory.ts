// A schema read (pg://{database}/{schema}): a directory of the relations the role can see, look-
// alikes grouped and partitions under their table, each entry's representative described, within
// a byte budget; the rest continues at pg://{database}/{schema}?after={name}, itself readable.
import type { Principal } from '../auth/index.js';
import { runRequestQuery, type PreparedQuery } from '../db/index.js';
import {
  DESCRIBE_NAMED_RELATIONS,
  DESCRIBE_SCHEMA,
} from './statements/catalog-statements.js';
import {
  DIRECTORY_ENTRIES,
  type DirectoryEntry,
} from './statements/directory-statements.js';
import {
  catalogUri,
  schemaPageUri,
  type CatalogAddress,
} from './catalog-uri.js';
import { dataBlock, DATA_NOTICE } from './data-block.js';
import {
  described,
  relationContent,
  withValueHints,
  type DescribedRelation,
} from './relation-content.js';
import type { CatalogSource } from './catalog-source.js';

/** A schema read's budget when the config file sets none (catalog.directoryBytes). */
export const DEFAULT_DIRECTORY_BYTES = 64 * 1024;
/** Room kept for the directory entry's own text. */
const LISTING_RESERVE = 1024;
/** The least a description takes: bounds how many the statement describes for a page. */
const SMALLEST_DESCRIPTION_BYTES = 512;

interface Shown {
  readonly entry: DirectoryEntry;
  readonly relation: DescribedRelation | undefined;
  readonly content: string | undefined;
}

/** A schema read: its URI, the address parsed from it, and how many entries a page may show. */
export interface SchemaRead {
  readonly uri: string;
  readonly address: CatalogAddress;
  readonly maxEntries: number;
}

/**
 * A schema as a directory: its entry (summary, this page's entries, the continuation), then the
 * description of each entry's representative, all within the budget; none when the role cannot
 * see the schema. At least one entry is shown, whatever its size, so every page moves on.
 */
export async function readSchema(
  source: CatalogSource,
  { uri, address, maxEntries }: SchemaRead,
  request: {
    readonly principal: Principal;
    readonly cancellation: { readonly aborted: boolean };
  },
): Promise<string[]> {
  const run = <TArgs, TRow>(query: PreparedQuery<TArgs, TRow>, args: TArgs) =>
    runRequestQuery({ db: source.db, ...request }, query, args);
  const { schema } = address;
  const database = source.databaseName;
  const [found] = await run(DESCRIBE_SCHEMA, { database, schema });
  if (found === undefined) return [];
  const budget = source.scope.directoryBytes ?? DEFAULT_DIRECTORY_BYTES;
  // Descriptions are never smaller than this, so more could not fit.
  const limit = Math.min(
    maxEntries,
    Math.ceil(budget / SMALLEST_DESCRIPTION_BYTES),
  );
  const entries = await run(DIRECTORY_ENTRIES, {
    database,
    schema,
    after: address.after ?? '',
    limit: limit + 1,
  });
  const page = entries.slice(0, limit);
  const relations = described(
    source,
    page.length === 0
      ? []
      : await run(DESCRIBE_NAMED_RELATIONS, {
          database,
          schema,
          names: page.map((entry) => entry.name),
        }),
  );
  await withValueHints(source, relations, request);
  const shown = fitEntries(
    source,
    { page, relations },
    {
      budget,
      format: address.format,
    },
  );
  const last = shown.at(-1)?.entry.name ?? '';
  const more = shown.length < page.length || entries.length > limit;
  const next = more ? schemaPageUri(source.name, address, last) : undefined;
  const listing = { summary: found.comment ?? '', shown, next };
  return [
    schemaEntry(uri, address, { ...listing, database: source.name }),
    ...shown.flatMap(({ content }) => content ?? []),
  ];
}

/** The page's entries, each with its description, while they fit the budget (at least one). */
function fitEntries(
  source: CatalogSource,
  {
    page,
    relations,
  }: {
    readonly page: readonly DirectoryEntry[];
    readonly relations: readonly DescribedRelation[];
  },
  { budget, format }: { budget: number; format: 'markdown' | 'json' },
): Shown[] {
  const byName = new Map(relations.map((entry) => [entry.facts.name, entry]));
  const shown: Shown[] = [];
  let used = LISTING_RESERVE;
  for (const entry of page) {
    const relation = byName.get(entry.name);
    const content =
      relation === undefined
        ? undefined
        : relationContent(source, relation, format);
    const size =
      Buffer.byteLength(listingLine(entry)) +
      (content === undefined ? 0 : Buffer.byteLength(content));
    if (used + size > budget && shown.length > 0) break;
    used += size;
    shown.push({ entry, relation, content });
  }
  return shown;
}

/** One entry as a line of the listing (inside a data block): name, kind, look-alikes, partitions, comment. */
function listingLine(entry: DirectoryEntry): string {
  const facts = [entry.kind];
  if (entry.members > 1)
    facts.push(
      `stands for ${entry.members} tables like ${entry.pattern}, all having the same columns (# a digit)`,
    );
  if (entry.partitions > 0)
    facts.push(
      `${entry.partitions} partitions like ${entry.partitionPattern ?? ''}`,
    );
  const comment =
    entry.comment === null
      ? ''
      : `: ${entry.comment.replace(/\s*[\r\n]+\s*/g, ' ')}`;
  const name =
    entry.members > 1
      ? `${entry.name} and ${entry.members - 1} more`
      : entry.name;
  return `${name} (${facts.join('; ')})${comment}\n`;
}

/** A schema's own content: a directory listing in Markdown, or its JSON summary. */
function schemaEntry(
  uri: string,
  { schema, format }: CatalogAddress,
  listing: {
    readonly summary: string;
    readonly shown: readonly Shown[];
    readonly next: string | undefined;
    readonly database: string;
  },
): string {
  const { summary, shown, next } = listing;
  if (format === 'json') return schemaJson(uri, schema, listing);
  const relations = shown.reduce((sum, { entry }) => sum + entry.members, 0);
  const lines = [
    `# Schema ${schema}`,
    '',
    DATA_NOTICE,
    '',
    ...(summary === '' ? [] : [dataBlock(summary)]),
    shown.length === 0
      ? 'No tables or views you can see.'
      : `${relations} tables and views you can see${next === undefined ? '' : ' on this page'}, as ${shown.length} entries; each entry's first table is described below (look-alikes share its columns):`,
    '',
    ...(shown.length === 0
      ? []
      : [
          dataBlock(
            shown.map(({ entry }) => listingLine(entry).trimEnd()).join('\n'),
          ),
        ]),
    ...(next === undefined
      ? []
      : [
          `More entries after ${shown.at(-1)?.entry.name ?? ''} (in name order): ${next}`,
          '',
        ]),
  ];
  return JSON.stringify({
    uri,
    mimeType: 'inode/directory',
    text: `${lines.join('\n')}`,
  });
}

/** A schema's own content in JSON: the same facts as the Markdown listing, as fields. */
function schemaJson(
  uri: string,
  schema: string,
  listing: {
    readonly summary: string;
    readonly shown: readonly Shown[];
    readonly next: string | undefined;
    readonly database: string;
  },
): string {
  const { summary, shown, next, database } = listing;
  return JSON.stringify({
    uri,
    mimeType: 'application/json',
    text: JSON.stringify({
      database,
      schema,
      comment: summary === '' ? null : summary,
      relations: shown.map(({ entry }) => ({
        name: entry.name,
        uri: catalogUri({ database, schema, relation: entry.name }),
        kind: entry.kind,
        comment: entry.comment,
        ...(entry.members > 1
          ? { alike: { count: entry.members, pattern: entry.pattern } }
          : {}),
        ...(entry.partitions > 0
          ? {
              partitions: {
                count: entry.partitions,
                pattern: entry.partitionPattern,
              },
            }
          : {}),
      })),
      truncated: next !== undefined,
      next: next ?? null,
    }),
  });
}
