// prompts/list (spec §8.1): the prompts the caller's role can read, keyset-paginated on the
// primary key under signed cursors, cacheable.
import {
  LIST_PROMPTS_PAGE,
  runRequestQuery,
  type PromptListingRow,
} from '../db/index.js';
import { ProtocolError } from '../errors.js';
import {
  createMethod,
  PaginatedParamsSchema,
  RawJson,
  type CursorCodec,
  type MethodHandler,
  type PaginatedParams,
} from '../protocol/index.js';
import type {
  PromptDependencies,
  StoredArgument,
} from './prompt-dependencies.js';

const COLLECTION = 'prompts';

/** The id a prompts cursor points after; a cursor of another list, or forged, is invalid. */
function afterIdOf(cursors: CursorCodec, cursor: string | undefined): string {
  if (cursor === undefined) return '0';
  const position = cursors.decode(cursor);
  const [key] = position.k;
  if (
    position.c !== COLLECTION ||
    position.k.length !== 1 ||
    typeof key !== 'string' ||
    !/^\d{1,19}$/.test(key)
  )
    throw new ProtocolError('INVALID_CURSOR', 'Invalid cursor.');
  return key;
}

/** A Prompt as the spec shows it: only its fields (`complete` is pgmcp's own). */
function renderPrompt(row: PromptListingRow): string {
  const prompt: Record<string, unknown> = { name: row.name };
  if (row.title !== null) prompt['title'] = row.title;
  if (row.description !== null) prompt['description'] = row.description;
  const stored = JSON.parse(row.arguments) as StoredArgument[];
  if (stored.length > 0)
    prompt['arguments'] = stored.map((argument) => {
      const shown: Record<string, unknown> = { name: argument.name };
      if (argument.title !== undefined) shown['title'] = argument.title;
      if (argument.description !== undefined)
        shown['description'] = argument.description;
      if (argument.required !== undefined)
        shown['required'] = argument.required;
      return shown;
    });
  return JSON.stringify(prompt);
}

/**
 * One page of the prompts the role can read, in primary-key order; `nextCursor` only when more
 * follow (one extra row is read to know).
 */
export function createListPromptsMethod(
  deps: PromptDependencies,
): MethodHandler<PaginatedParams> {
  return createMethod({
    params: PaginatedParamsSchema,
    async handle(params, ctx) {
      const afterId = afterIdOf(deps.cursors, params.cursor);
      const rows = await runRequestQuery(
        deps.db,
        ctx.principal,
        ctx,
        LIST_PROMPTS_PAGE,
        { afterId, limit: deps.pageSize + 1 },
      );
      const page = rows.slice(0, deps.pageSize);
      const last = page.at(-1);
      return {
        prompts: new RawJson(`[${page.map(renderPrompt).join(',')}]`),
        ...(rows.length > deps.pageSize && last !== undefined
          ? { nextCursor: deps.cursors.encode({ c: COLLECTION, k: [last.id] }) }
          : {}),
        ttlMs: deps.ttlMs,
        // Who asks decides what is listed, unless no role is set (no authorization configured).
        cacheScope: ctx.principal.role === null ? 'public' : 'private',
      };
    },
  });
}
