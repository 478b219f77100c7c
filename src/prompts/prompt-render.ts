// A stored prompt's message templates → PromptMessages for one caller: {{argument}} placeholders
// replaced by the values given, and pgmcp:links / pgmcp:embed contents rendered as the caller's
// role, so links and embedded resources are only ever ones it can read (docs/prompts.md).
import { runRequestQuery } from '../db/index.js';
import { TAGGED_RESOURCES } from './statements/prompt-statements.js';
import { ProtocolError } from '../errors.js';
import type { RequestContext } from '../protocol/index.js';
import type { PromptDependencies } from './prompt-dependencies.js';
import {
  resolveTable,
  tablesMentioned,
  type VisibleTable,
} from './prompt-tables.js';

type Content = Record<string, unknown> & { type: string };
/** A stored message (the migration's check guarantees role and content.type). */
export interface MessageTemplate {
  readonly role: 'user' | 'assistant';
  readonly content: Content;
}
type PromptMessage = { role: 'user' | 'assistant'; content: Content };

/** Most resource_links one pgmcp:links content renders. */
export const MAX_LINKS = 1000;
/** Most tables a question-matched pgmcp:links content links. */
const MAX_MATCHED_TABLES = 20;
/** ContentBlock types a template may hold as they are. */
const CONTENT_TYPES = new Set([
  'text',
  'image',
  'audio',
  'resource',
  'resource_link',
]);

/** `value` with every {{name}} of `values` replaced, in every string inside it. */
function substitute(
  value: unknown,
  values: ReadonlyMap<string, string>,
): unknown {
  if (typeof value === 'string')
    return value.replace(
      /\{\{([A-Za-z0-9_.-]+)\}\}/g,
      (placeholder, name: string) => values.get(name) ?? placeholder,
    );
  if (Array.isArray(value))
    return value.map((item) => substitute(item, values));
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [
        key,
        substitute(item, values),
      ]),
    );
  return value;
}

/**
 * Render `templates` for the caller. `values` holds every declared argument (an optional one not
 * given is ""). Throws INVALID_PARAMS for a table or resource the caller cannot read, and an
 * internal error for a template no client could be sent.
 */
export async function renderMessages(
  deps: PromptDependencies,
  ctx: RequestContext,
  {
    templates,
    values,
    consented = false,
  }: {
    readonly templates: readonly MessageTemplate[];
    readonly values: ReadonlyMap<string, string>;
    /** A person consented to embedding sensitive resources (the retry after asking). */
    readonly consented?: boolean;
  },
): Promise<PromptMessage[]> {
  const messages: PromptMessage[] = [];
  for (const template of templates) {
    const content = substitute(template.content, values) as Content;
    const role = template.role;
    if (content.type === 'pgmcp:links')
      for (const link of await renderLinks(deps, ctx, content))
        messages.push({ role, content: link });
    else if (content.type === 'pgmcp:embed')
      messages.push({
        role,
        content: await renderEmbed(deps, ctx, { content, consented }),
      });
    else if (CONTENT_TYPES.has(content.type))
      messages.push({ role, content: checkUri(content) });
    else
      throw new Error(
        `a stored prompt has a content of unknown type ${content.type}`,
      );
  }
  return messages;
}

// A URI's scheme, as RFC 3986 spells it: an argument placed in a URI must still make one.
const HAS_SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\S*$/;

/** A literal resource or resource_link whose URI an argument filled in must still have a URI. */
function checkUri(content: Content): Content {
  const resource = content['resource'];
  const uri =
    content.type === 'resource' &&
    typeof resource === 'object' &&
    resource !== null
      ? (resource as Record<string, unknown>)['uri']
      : content.type === 'resource_link'
        ? content['uri']
        : undefined;
  if (uri !== undefined && (typeof uri !== 'string' || !HAS_SCHEME.test(uri)))
    throw new ProtocolError(
      'INVALID_PARAMS',
      'Invalid params: an argument placed in a resource URI does not make a URI.',
    );
  return content;
}

function stringField(content: Content, field: string): string | undefined {
  const value = content[field];
  return typeof value === 'string' ? value : undefined;
}

/**
 * pgmcp:links: one resource_link per stored resource carrying `tag` that the role can read; or per
 * table of `tables` (comma-separated); or, when `tables` is empty, per visible table `match` names.
 */
async function renderLinks(
  deps: PromptDependencies,
  ctx: RequestContext,
  content: Content,
): Promise<Content[]> {
  const tag = stringField(content, 'tag');
  if (tag !== undefined) {
    const rows = await runRequestQuery(
      { db: deps.db, principal: ctx.principal, cancellation: ctx },
      TAGGED_RESOURCES,
      {
        tag,
        limit: MAX_LINKS,
      },
    );
    return rows.map((row) => {
      const link: Content = {
        type: 'resource_link',
        uri: row.uri,
        name: row.name,
      };
      if (row.title !== null) link['title'] = row.title;
      if (row.description !== null) link['description'] = row.description;
      if (row.mime_type !== null) link['mimeType'] = row.mime_type;
      return link;
    });
  }
  const named = namedTables(deps, stringField(content, 'tables') ?? '');
  const tables: VisibleTable[] = [];
  if (named.length > 0)
    for (const name of named) tables.push(await resolveTable(deps, ctx, name));
  else
    tables.push(
      ...(await tablesMentioned(deps, ctx, {
        question: stringField(content, 'match') ?? '',
        limit: MAX_MATCHED_TABLES,
      })),
    );
  return tables.map((table) => {
    const link: Content = {
      type: 'resource_link',
      uri: deps.catalog.tableUri(table.schema, table.relation),
      name: `${table.schema}.${table.relation}`,
      mimeType: 'text/markdown',
    };
    if (table.comment !== null) link['description'] = table.comment;
    return link;
  });
}

/**
 * The names of a comma-separated `tables` list. Each is a catalog lookup: a list longer than the
 * bound is -32602 before any runs (issue 32 point 10).
 */
function namedTables(deps: PromptDependencies, list: string): string[] {
  const named = list
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  if (named.length > deps.limits.maxTables)
    throw new ProtocolError(
      'INVALID_PARAMS',
      `Invalid params: a prompt links at most ${deps.limits.maxTables} tables; ${named.length} were named.`,
      { data: { maxTables: deps.limits.maxTables } },
    );
  return named;
}

/** A prompt embeds a sensitive resource: prompts/get asks the person before rendering it. */
export class ConsentNeeded extends Error {
  constructor(readonly uri: string) {
    super(`embedding ${uri} needs a person's consent`);
  }
}

/** pgmcp:embed: the resource `uri`, or the description of table `table`, read as the caller. */
async function renderEmbed(
  deps: PromptDependencies,
  ctx: RequestContext,
  {
    content,
    consented,
  }: { readonly content: Content; readonly consented: boolean },
): Promise<Content> {
  const table = stringField(content, 'table');
  let uri = stringField(content, 'uri');
  if (table !== undefined) {
    const resolved = await resolveTable(deps, ctx, table);
    uri = deps.catalog.tableUri(resolved.schema, resolved.relation);
  }
  if (uri === undefined)
    throw new Error(
      'a stored prompt has a pgmcp:embed content without uri or table',
    );
  const read = await deps.read(uri, ctx);
  const [first] = read.contents;
  // Not found before sensitive: a sensitive resource the caller may not read (a row of a table
  // marked sensitive that its role cannot see) is answered exactly like a missing one, without
  // asking anyone's consent first (issue 32 point 10).
  if (first === undefined)
    throw new ProtocolError(
      'INVALID_PARAMS',
      'Invalid params: the resource to embed was not found.',
      {
        data: { uri },
      },
    );
  if (read.sensitive && !consented) throw new ConsentNeeded(uri);
  return { type: 'resource', resource: JSON.parse(first) as unknown };
}
