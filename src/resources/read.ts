// resources/read: one stored resource by URI, or a file: directory with its immediate children.
import type { Principal } from '../auth/index.js';
import { READ_DIRECTORY, READ_RESOURCE, runRequestTransaction, type DatabaseHandle, type ResourceRow } from '../db/index.js';
import { ProtocolError } from '../errors.js';
import {
  createMethod,
  ReadResourceParamsSchema,
  type MethodHandler,
  type ReadResourceParams,
  type ResourceContents,
} from '../protocol/index.js';
import { cacheHints } from './cache-hints.js';
import { isDirectoryUri, prefixUpperBound, validateResourceUri } from './uri.js';

/** Where a content item carries the Resource fields ResourceContents has no room for. */
export const META_ANNOTATIONS = 'dev.pgmcp/annotations';
export const META_SIZE = 'dev.pgmcp/size';
export const META_TRUNCATED = 'dev.pgmcp/truncated';

export interface ReadDependencies {
  readonly db: DatabaseHandle;
  /** Most children a directory read returns (the directory entry says when it cut). */
  readonly maxDirectoryEntries: number;
}

/**
 * The URI is validated (and file: paths normalized) before any query. A missing resource is
 * -32602 with the URI in `data`, never an empty `contents`.
 */
export function createReadResourceMethod(deps: ReadDependencies): MethodHandler<ReadResourceParams> {
  return createMethod({
    params: ReadResourceParamsSchema,
    async handle(params, ctx) {
      const uri = validateResourceUri(params.uri);
      const contents = isDirectoryUri(uri)
        ? await readDirectory(deps, uri, ctx.principal, ctx.signal)
        : await readOne(deps, uri, ctx.principal, ctx.signal);
      if (contents.length === 0) {
        throw new ProtocolError('RESOURCE_NOT_FOUND', 'Resource not found.', { data: { uri: params.uri } });
      }
      return { contents, ...cacheHints('read', ctx.principal) };
    },
  });
}

async function readOne(deps: ReadDependencies, uri: string, principal: Principal, signal: AbortSignal): Promise<ResourceContents[]> {
  const rows = await runRequestTransaction(deps.db, principal, signal, (queries) => queries.run(READ_RESOURCE, { uri }));
  return rows.map(toContents);
}

async function readDirectory(
  deps: ReadDependencies,
  uri: string,
  principal: Principal,
  signal: AbortSignal,
): Promise<ResourceContents[]> {
  // One statement: the directory row (if stored) sorts first, then up to max + 1 children.
  const rows = await runRequestTransaction(deps.db, principal, signal, (queries) =>
    queries.run(READ_DIRECTORY, {
      directoryUri: uri,
      upperBound: prefixUpperBound(uri),
      limit: deps.maxDirectoryEntries + 2,
    }),
  );
  const stored = rows[0]?.uri === uri ? rows[0] : undefined;
  const children = rows.filter((row) => row.uri !== uri);
  if (stored === undefined && children.length === 0) return [];
  const truncated = children.length > deps.maxDirectoryEntries;
  const shown = children.slice(0, deps.maxDirectoryEntries);
  const entry: ResourceContents =
    stored === undefined
      ? { uri, mimeType: 'inode/directory', text: listing(uri, shown, truncated) }
      : toContents(stored);
  if (truncated) entry._meta = { ...entry._meta, [META_TRUNCATED]: true };
  return [entry, ...shown.map(toContents)];
}

/** A plain-text listing for a directory that has children but no stored row of its own. */
function listing(uri: string, children: readonly ResourceRow[], truncated: boolean): string {
  const lines = children.map((child) => {
    const name = child.uri.slice(uri.length);
    return child.mime_type === 'inode/directory' || name.endsWith('/') ? name : `${name}\t${child.size} bytes`;
  });
  if (truncated) lines.push('… (more entries not shown)');
  return lines.join('\n');
}

function toContents(row: ResourceRow): ResourceContents {
  const meta = {
    [META_SIZE]: Number(row.size),
    [META_ANNOTATIONS]: {
      ...(row.audience === null ? {} : { audience: row.audience }),
      ...(row.priority === null ? {} : { priority: row.priority }),
      lastModified: row.updated_at.toISOString(),
    },
  };
  const mimeType = row.mime_type ?? undefined;
  if (row.blob !== null) {
    return { uri: row.uri, ...(mimeType === undefined ? {} : { mimeType }), blob: row.blob.toString('base64'), _meta: meta };
  }
  return { uri: row.uri, ...(mimeType === undefined ? {} : { mimeType }), text: row.text ?? '', _meta: meta };
}
