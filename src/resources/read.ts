// resources/read: one stored resource by URI, or a file: directory with its immediate children.
import type { Principal } from '../auth/index.js';
import { runRequestQuery, type DatabaseHandle } from '../db/index.js';
import {
  COLUMN,
  READ_DIRECTORY,
  READ_RESOURCE,
  type ResourceContentRow,
} from './statements/resource-statements.js';
import { ProtocolError } from '../errors.js';
import {
  createMethod,
  RawJson,
  ReadResourceParamsSchema,
  type MethodHandler,
  type ReadResourceParams,
  type RequestContext,
  type RequestNotices,
} from '../protocol/index.js';
import { cacheHints } from './cache-hints.js';
import { isCatalogUri } from './catalog-uri.js';
import { isSensitiveRowUri, readCatalog } from './catalog.js';
import type { ConsentGate } from './consent.js';
import type { CatalogSource } from './catalog-source.js';
import { renderContents } from './render.js';
import {
  isDirectoryUri,
  prefixUpperBound,
  validateResourceUri,
} from './uri.js';

/** Set in a directory entry's `_meta` when the read cut its children (size and annotations ride
 * in `dev.pgmcp/size` and `dev.pgmcp/annotations`, written by render.ts). */
const META_TRUNCATED = 'dev.pgmcp/truncated';
/** A single body this large (in serialized characters) gets a progress notice when asked for. */
const LARGE_READ_CHARS = 1024 * 1024;

export interface ReadDependencies {
  readonly db: DatabaseHandle;
  /** The databases whose catalog and rows are pg:// resources (the first is `db`'s). */
  readonly sources: readonly CatalogSource[];
  /** Most children a directory read returns (the directory entry says when it cut). */
  readonly maxDirectoryEntries: number;
  /** Asks a person before sensitive data is read (consent.ts). */
  readonly consent: ConsentGate;
  /** Most changes a read of pg://{database}?changes_since= returns (default 100). */
  readonly pageSize?: number | undefined;
  /** The change log's retention: older change tokens are refused (default one day). */
  readonly changeRetentionSeconds?: number | undefined;
}

/** What a read found: contents JSON, and whether reading it needs a person's consent. */
interface Found {
  readonly contents: string[];
  readonly sensitive: boolean;
}

/**
 * The URI is validated (and file: paths normalized) before any query. A missing resource is
 * -32602 with the URI in `data`, never an empty `contents`. A sensitive resource is read only on
 * a retry carrying a person's consent (consent.ts); until then the answer is input_required.
 */
export function createReadResourceMethod(
  deps: ReadDependencies,
): MethodHandler<ReadResourceParams> {
  return createMethod({
    params: ReadResourceParamsSchema,
    async handle(params, ctx) {
      const uri = validateResourceUri(params.uri);
      // Directory and catalog reads may gather many entries: say so while they run (spec §11).
      const many = isCatalogUri(uri) || isDirectoryUri(uri);
      if (many) ctx.notices.progress(0, undefined, 'Reading entries');
      const found = await find(deps, uri, {
        principal: ctx.principal,
        cancellation: ctx,
        notices: ctx.notices,
      });
      if (found.contents.length === 0) {
        throw new ProtocolError('RESOURCE_NOT_FOUND', 'Resource not found.', {
          data: { uri: params.uri },
        });
      }
      if (found.sensitive) {
        const consent = await deps.consent.check(
          ctx,
          { method: 'resources/read', target: uri },
          params,
        );
        // Spec §4.5: an input_required result carries no caching fields.
        if (!consent.granted) return consent.result;
      }
      const { contents } = found;
      // A read after consent is the caller's alone and must not be kept (spec §4.5).
      const hints = found.sensitive
        ? { ttlMs: 0, cacheScope: 'private' as const }
        : cacheHints('read', ctx.principal);
      reportRead(ctx, contents, many);
      ctx.notices.log('info', 'cache', {
        uri: params.uri,
        scope: hints.cacheScope,
        maxAgeMs: hints.ttlMs,
      });
      return { contents: new RawJson(`[${contents.join(',')}]`), ...hints };
    },
  });
}

/**
 * What a read of `requested` as `principal` finds, for embedding elsewhere (a prompt): each
 * content's JSON, none when the resource does not exist or the role cannot read it, and whether
 * it is sensitive (its contents go out only once a person consented: the embedder asks, through
 * the consent gate, before it uses them); an invalid URI throws INVALID_URI.
 */
export async function readContents(
  deps: ReadDependencies,
  requested: string,
  {
    principal,
    cancellation,
  }: {
    readonly principal: Principal;
    readonly cancellation: { readonly aborted: boolean };
  },
): Promise<{ contents: string[]; sensitive: boolean }> {
  const found = await find(deps, validateResourceUri(requested), {
    principal,
    cancellation,
    notices: undefined,
  });
  return { contents: found.contents, sensitive: found.sensitive };
}

/** Who reads, how the request is cancelled, and where its notices go (none when embedded). */
interface Reader {
  readonly principal: Principal;
  readonly cancellation: { readonly aborted: boolean };
  readonly notices: RequestNotices | undefined;
}

async function find(
  deps: ReadDependencies,
  uri: string,
  reader: Reader,
): Promise<Found> {
  if (isCatalogUri(uri))
    return {
      contents: await readCatalog(deps.sources, uri, {
        principal: reader.principal,
        cancellation: reader.cancellation,
        options: {
          maxEntries: deps.maxDirectoryEntries,
          pageSize: deps.pageSize,
          changeRetentionSeconds: deps.changeRetentionSeconds,
        },
      }),
      sensitive: isSensitiveRowUri(deps.sources, uri),
    };
  return isDirectoryUri(uri)
    ? readDirectory(deps, uri, reader)
    : readOne(deps, uri, reader);
}

/** One stored resource, or none. */
async function readOne(
  deps: ReadDependencies,
  uri: string,
  { principal, cancellation }: Reader,
): Promise<Found> {
  const rows = await runRequestQuery(
    { db: deps.db, principal, cancellation },
    READ_RESOURCE,
    { uri },
  );
  return {
    contents: rows.map((row) => renderContents(row)),
    sensitive: rows.some(isSensitive),
  };
}

/** pgmcp.resources.sensitive, as PostgreSQL prints a boolean. */
function isSensitive(row: ResourceContentRow): boolean {
  return row[COLUMN.sensitive] === 't';
}

/** A read's closing progress notice: entries gathered, or the size of one large body. */
function reportRead(
  ctx: RequestContext,
  contents: readonly string[],
  many: boolean,
): void {
  if (!ctx.notices.wantsProgress) return;
  if (many) {
    ctx.notices.progress(
      contents.length,
      contents.length,
      `Read ${contents.length} entries`,
    );
    return;
  }
  const bytes = contents.reduce((sum, item) => sum + item.length, 0);
  if (bytes >= LARGE_READ_CHARS)
    ctx.notices.progress(1, 1, `Read ${Math.round(bytes / 1024)} KiB`);
}

/**
 * The directory entry (stored or synthesized) followed by its immediate children, as contents JSON.
 * Sensitive children are left out (each is read on its own, with consent); a sensitive directory
 * row makes the whole read need consent.
 */
async function readDirectory(
  deps: ReadDependencies,
  uri: string,
  reader: Reader,
): Promise<Found> {
  // One statement: the directory row (if stored) sorts first, then up to max + 1 children.
  const rows = await runRequestQuery(
    {
      db: deps.db,
      principal: reader.principal,
      cancellation: reader.cancellation,
    },
    READ_DIRECTORY,
    {
      directoryUri: uri,
      upperBound: prefixUpperBound(uri),
      limit: deps.maxDirectoryEntries + 2,
    },
  );
  const stored = rows[0]?.[COLUMN.uri] === uri ? rows[0] : undefined;
  const children = rows.filter(
    (row) => row[COLUMN.uri] !== uri && !isSensitive(row),
  );
  if (stored === undefined && children.length === 0)
    return { contents: [], sensitive: false };
  const truncated = children.length > deps.maxDirectoryEntries;
  if (truncated)
    reader.notices?.log('warning', 'limits', {
      uri,
      message: `directory cut at ${deps.maxDirectoryEntries} entries`,
      maxDirectoryEntries: deps.maxDirectoryEntries,
    });
  const shown = children.slice(0, deps.maxDirectoryEntries);
  const entry =
    stored === undefined
      ? JSON.stringify({
          uri,
          mimeType: 'inode/directory',
          text: listing(uri, shown, truncated),
          ...(truncated ? { _meta: { [META_TRUNCATED]: true } } : {}),
        })
      : renderContents(stored, truncated ? `,"${META_TRUNCATED}":true` : '');
  return {
    contents: [entry, ...shown.map((row) => renderContents(row))],
    sensitive: stored !== undefined && isSensitive(stored),
  };
}

/** A plain-text listing for a directory that has children but no stored row of its own. */
function listing(
  uri: string,
  children: readonly ResourceContentRow[],
  truncated: boolean,
): string {
  const lines = children.map((child) => {
    const name = child[COLUMN.uri].slice(uri.length);
    return child[COLUMN.mime_type] === 'inode/directory' || name.endsWith('/')
      ? name
      : `${name}\t${child[COLUMN.size]} bytes`;
  });
  if (truncated) lines.push('… (more entries not shown)');
  return lines.join('\n');
}
