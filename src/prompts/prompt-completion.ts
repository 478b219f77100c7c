// completion/complete for prompt arguments (spec §9, ref/prompt): tags of the stored resources the
// role can read, or tables and views it can see, as each argument's `complete` says.
import { runRequestQuery } from '../db/index.js';
import { RESOURCE_TAGS } from './statements/prompt-statements.js';
import { ProtocolError } from '../errors.js';
import type { RequestContext } from '../protocol/index.js';
import type { PromptDependencies } from './prompt-dependencies.js';
import { findPrompt } from './prompt-get.js';
import { visibleTables } from './prompt-tables.js';

/** At most this many values in one answer (the spec's cap). */
const MAX_VALUES = 100;

/**
 * Values for `argument` of prompt `name`, starting with what was typed. An argument taking a
 * comma-separated list of tables completes its last item. Unknown prompt or argument: -32602.
 */
export async function completePromptArgument(
  deps: PromptDependencies,
  ctx: RequestContext,
  {
    name,
    argument,
  }: {
    readonly name: string;
    readonly argument: { readonly name: string; readonly value: string };
  },
): Promise<Record<string, unknown>> {
  const prompt = await findPrompt(deps, ctx, name);
  const declared = prompt.arguments.find(
    (entry) => entry.name === argument.name,
  );
  if (declared === undefined)
    throw new ProtocolError(
      'INVALID_PARAMS',
      `Invalid params: prompt ${prompt.name} has no argument ${JSON.stringify(argument.name.slice(0, 100))}.`,
    );
  let found: string[] = [];
  if (declared.complete === 'tags')
    found = (
      await runRequestQuery(
        { db: deps.db, principal: ctx.principal, cancellation: ctx },
        RESOURCE_TAGS,
        {
          prefix: argument.value,
          limit: MAX_VALUES + 1,
        },
      )
    ).map((row) => row.tag);
  else if (declared.complete === 'tables') {
    const cut = argument.value.lastIndexOf(',') + 1;
    const before = argument.value.slice(0, cut);
    const typed = argument.value.slice(cut).trimStart();
    const spacing = argument.value.slice(
      cut,
      argument.value.length - typed.length,
    );
    found = (
      await visibleTables(deps, ctx, { prefix: typed, limit: MAX_VALUES + 1 })
    ).map((table) => `${before}${spacing}${table.schema}.${table.relation}`);
  }
  const values = found.slice(0, MAX_VALUES);
  return {
    completion: {
      values,
      ...(found.length > MAX_VALUES ? {} : { total: values.length }),
      hasMore: found.length > MAX_VALUES,
    },
  };
}
