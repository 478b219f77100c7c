// The one keyset cursor design every collection lists through (docs/architecture.md "Design rules").
import {
  runRequestQuery,
  type DatabaseHandle,
  type PreparedQuery,
} from '../db/index.js';
import type { Principal } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import {
  createMethod,
  KeptResult,
  PaginatedParamsSchema,
  RawJson,
  type CursorCodec,
  type MethodHandler,
  type PaginatedParams,
  type RequestContext,
} from '../protocol/index.js';
import { cacheHints, type TTL_MS } from './cache-hints.js';
import type { RolePageMemo } from './role-page-memo.js';

/** A page as a keyset list method answers it: the items' JSON and the cursor to the next page. */
export interface ListPage {
  readonly items: string;
  readonly nextCursor: string | undefined;
}

/** What every list method needs. */
export interface ListDependencies {
  readonly db: DatabaseHandle;
  readonly cursors: CursorCodec;
  readonly pageSize: number;
}

/** The last primary key a cursor of `collection` points after; anything else is an invalid cursor. */
export function decodeAfterId(
  cursors: CursorCodec,
  cursor: string | undefined,
  collection: string,
): string {
  if (cursor === undefined) return '0';
  const position = cursors.decode(cursor);
  const key = position.k[0];
  if (
    position.c !== collection ||
    position.k.length !== 1 ||
    typeof key !== 'string' ||
    !/^\d{1,19}$/.test(key)
  ) {
    throw new ProtocolError('INVALID_CURSOR', 'Invalid cursor.');
  }
  return key;
}

/** A keyset page to read: the statement, the position after which it starts, how many rows fit. */
export interface KeysetRequest<TArgs extends { limit: number }, TRow> {
  readonly query: PreparedQuery<TArgs, TRow>;
  readonly position: Omit<TArgs, 'limit'>;
  readonly room: number;
}

/**
 * Up to `room` rows after a keyset position, as the request's role, and whether more follow: one
 * extra row is fetched to know, so the last page is known without a count.
 */
export async function keysetPage<TArgs extends { limit: number }, TRow>(
  db: DatabaseHandle,
  ctx: { readonly principal: Principal; readonly aborted: boolean },
  { query, position, room }: KeysetRequest<TArgs, TRow>,
): Promise<{ page: TRow[]; more: boolean }> {
  const rows = await runRequestQuery(
    { db, principal: ctx.principal, cancellation: ctx },
    query,
    {
      ...position,
      limit: room + 1,
    } as TArgs,
  );
  return {
    page: rows.length > room ? rows.slice(0, room) : rows,
    more: rows.length > room,
  };
}

/**
 * A list method over one table: keyset pages on the bigint primary key, in key order. Pages are
 * stable while rows are inserted and deleted (no duplicates; nothing that existed for the whole
 * walk is skipped), the last page is as fast as the first, and `nextCursor` is absent exactly on
 * the last page (one extra row is fetched to know). Cursors are bound to `collection`.
 */
export function createKeysetListMethod<TRow>(
  deps: ListDependencies,
  options: {
    readonly collection: string;
    readonly query: PreparedQuery<{ afterId: string; limit: number }, TRow>;
    /** The result member holding the items, e.g. "resources". */
    readonly field: string;
    /** One item's JSON. */
    readonly render: (row: TRow) => string;
    /** The row's primary key, as text (what the next cursor points after). */
    readonly keyOf: (row: TRow) => string;
    readonly cache: keyof typeof TTL_MS;
    /**
     * Answers kept per role, for a table whose policy reads only the role (prompts): the whole
     * result, which the dispatcher serializes once (its cacheScope depends only on the role).
     */
    readonly memo?: RolePageMemo<KeptResult>;
  },
): MethodHandler<PaginatedParams> {
  const readPage = async (
    ctx: RequestContext,
    afterId: string,
  ): Promise<ListPage> => {
    const { page, more } = await keysetPage(deps.db, ctx, {
      query: options.query,
      position: { afterId },
      room: deps.pageSize,
    });
    const last = page.at(-1);
    return {
      items: `[${page.map(options.render).join(',')}]`,
      nextCursor:
        more && last !== undefined
          ? deps.cursors.encode({
              c: options.collection,
              k: [options.keyOf(last)],
            })
          : undefined,
    };
  };
  const readResult = async (
    ctx: RequestContext,
    afterId: string,
  ): Promise<Record<string, unknown>> => {
    const page = await readPage(ctx, afterId);
    return {
      [options.field]: new RawJson(page.items),
      ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }),
      ...cacheHints(options.cache, ctx.principal),
    };
  };
  return createMethod({
    params: PaginatedParamsSchema,
    async handle(params, ctx) {
      const afterId = decodeAfterId(
        deps.cursors,
        params.cursor,
        options.collection,
      );
      return options.memo === undefined
        ? await readResult(ctx, afterId)
        : await memoized(options.memo, ctx, { afterId, read: readResult });
    },
  });
}

/** The role's answer from `memo`, else read (and kept unless the memo was cleared meanwhile). */
async function memoized(
  memo: RolePageMemo<KeptResult>,
  ctx: RequestContext,
  {
    afterId,
    read,
  }: {
    readonly afterId: string;
    readonly read: (
      ctx: RequestContext,
      afterId: string,
    ) => Promise<Record<string, unknown>>;
  },
): Promise<KeptResult> {
  const role = ctx.principal.role;
  const kept = memo.get(role, afterId);
  ctx.notices.log('info', 'cache', {
    page: kept === undefined ? 'miss' : 'hit',
  });
  if (kept !== undefined) return kept;
  const generation = memo.generation;
  const answer = new KeptResult(await read(ctx, afterId));
  memo.set(role, afterId, { page: answer, generation });
  return answer;
}
