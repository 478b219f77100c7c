// The prompts feature wired: prompts/list pages kept per role, prompts/get of stored prompts and
// of the extension's, and what prompts/ renders with.
import { LIST_PROMPTS_PAGE } from '../prompts/index.js';
import {
  createKeysetListMethod,
  catalogUri,
  readContents,
  RolePageMemo,
} from '../resources/index.js';
import {
  GetPromptParamsSchema,
  type GetPromptParams,
  type KeptResult,
  type MethodHandler,
  type PaginatedParams,
} from '../protocol/index.js';
import {
  createGetPromptMethod,
  DEFAULT_PROMPT_LIMITS,
  PROMPTS_COLLECTION,
  renderPrompt,
  type PromptDependencies,
} from '../prompts/index.js';
import type { AppOptions } from './app-options.js';
import type { ResourceFeature } from './wire-resources.js';

/** prompts/list, prompts/get and what completion asks of prompts. */
export interface PromptFeature {
  readonly list: MethodHandler<PaginatedParams>;
  readonly get: MethodHandler<GetPromptParams>;
  readonly deps: PromptDependencies;
  /** prompts/list pages per role, dropped on a prompt or schema change. */
  readonly pages: RolePageMemo<KeptResult>;
}

/** The prompts feature over the resources feature's reads and consent. */
export function wirePrompts(
  options: AppOptions,
  resources: ResourceFeature,
): PromptFeature {
  const deps = promptDependencies(options, resources.readDeps);
  // prompts/list pages per role (pgmcp.prompts' policy reads only the role), dropped when the
  // feed reports a prompt or schema change, and after the role decisions' age.
  const pages = new RolePageMemo<KeptResult>({
    maxEntries: 1000,
    maxAgeMs: options.roleCacheMaxAgeMs ?? 10_000,
  });
  return {
    list: createKeysetListMethod(resources.listDeps, {
      collection: PROMPTS_COLLECTION,
      query: LIST_PROMPTS_PAGE,
      field: 'prompts',
      render: renderPrompt,
      keyOf: (row) => row.id,
      cache: 'list',
      memo: pages,
    }),
    get: getPromptMethod(options, deps),
    deps,
    pages,
  };
}

/** prompts/get of stored prompts, and of the extension's prompts by name. */
function getPromptMethod(
  options: AppOptions,
  deps: PromptDependencies,
): MethodHandler<GetPromptParams> {
  const stored = createGetPromptMethod(deps);
  const added = options.extension?.prompts;
  if (added === undefined) return stored;
  return {
    params: GetPromptParamsSchema,
    handle: (params, ctx) =>
      (Object.hasOwn(added, params.name) ? added[params.name] : undefined)?.(
        params,
        ctx,
      ) ?? stored.handle(params, ctx),
  };
}

/** What prompts/ renders with: the main database, its catalog, and reads as the caller. */
function promptDependencies(
  options: AppOptions,
  readDeps: Parameters<typeof readContents>[0],
): PromptDependencies {
  const main = options.sources[0];
  return {
    db: options.db,
    catalog: {
      include: main?.scope.include ?? null,
      exclude: main?.scope.exclude ?? [],
      tableUri: (schema, relation) =>
        catalogUri({ database: main?.name ?? '', schema, relation }),
    },
    read: (uri, ctx) =>
      readContents(readDeps, uri, {
        principal: ctx.principal,
        cancellation: ctx,
      }),
    consent: (ctx, target, input) =>
      readDeps.consent.check(ctx, { method: 'prompts/get', target }, input),
    limits: options.promptLimits ?? DEFAULT_PROMPT_LIMITS,
  };
}
