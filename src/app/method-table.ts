// The 2026-07-28 method table: every method this server answers, and the handler that serves it,
// read top to bottom. Each feature is wired by its own function (wire-*.ts); the 2025-11-25 era
// shares these handlers through its own table (legacy/ era/legacy-methods.ts, wired in
// wire-legacy.ts).
import { SCOPED_METHOD_GROUPS, type ScopePolicy } from '../auth/index.js';
import {
  createDiscoverMethod,
  type CompleteParams,
  type MethodHandler,
} from '../protocol/index.js';
import type { createListenMethod } from '../notifications/index.js';
import {
  createListToolsMethod,
  createCallToolMethod,
  type Tool,
} from '../tools/index.js';
import { TTL_MS } from '../resources/index.js';
import type { PromptFeature } from './wire-prompts.js';
import type { ResourceFeature } from './wire-resources.js';

/** What a client is told this server is, in both eras. */
export const INSTRUCTIONS =
  'pgmcp serves documents, files and notes stored in PostgreSQL as MCP resources. ' +
  'List them with resources/list (paginated), read one by URI with resources/read; ' +
  'reading a file:///…/ directory returns its entry and its children. ' +
  'pg://{database}/{schema}/{table} describes a table or view of the company database you have ' +
  'access to (append ?format=json for JSON); pg://{database}/{schema} lists a schema. ' +
  'resources/templates/list shows the URI patterns (notes:///{tag}/{slug}, file:///{+path}, pg://…); ' +
  'completion/complete suggests their variables from the resources you can read. ' +
  'subscriptions/listen delivers notifications/resources/updated for subscribed URIs (a file:///…/ ' +
  'directory covers what is under it) and notifications/resources/list_changed as changes commit. ' +
  'prompts/list shows the prompts stored for your role (digest, explain-table, write-query in the demo).';

/** What the table is filled from: each feature, wired. */
export interface Features {
  readonly resources: ResourceFeature;
  readonly complete: MethodHandler<CompleteParams>;
  readonly prompts: PromptFeature;
  readonly listen: ReturnType<typeof createListenMethod>;
  readonly tools: readonly Tool[];
  readonly scopes: ScopePolicy;
}

/**
 * method → handler, for 2026-07-28 (scope-guarded when a scope map is configured). `any`: a
 * heterogeneous map; createMethod checked each handler against its params schema.
 */
export function modernMethods(
  features: Features,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
): Map<string, MethodHandler<any>> {
  const { resources, prompts, scopes } = features;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
  const methods = new Map<string, MethodHandler<any>>([
    ['server/discover', discoverMethod()],
    ['resources/list', resources.list],
    ['resources/templates/list', resources.templates],
    ['resources/read', resources.read],
    ['completion/complete', features.complete],
    ['prompts/list', prompts.list],
    ['prompts/get', prompts.get],
    ['subscriptions/listen', features.listen],
    ['tools/list', createListToolsMethod([...features.tools], scopes)],
    ['tools/call', createCallToolMethod([...features.tools], scopes)],
  ]);
  return scopes.active ? scopeGuarded(methods, scopes) : methods;
}

/** server/discover: what this server offers 2026-07-28 clients. */
function discoverMethod(): ReturnType<typeof createDiscoverMethod> {
  return createDiscoverMethod({
    capabilities: {
      resources: { subscribe: true, listChanged: true },
      tools: {},
      prompts: { listChanged: true },
      completions: {},
    },
    instructions: INSTRUCTIONS,
    ttlMs: TTL_MS.discover,
  });
}

/**
 * The methods, each of a group the scope map guards checking the caller's scopes first (issue 32
 * point 11). A guarded method is never constant: its answer is not shared across callers.
 */
function scopeGuarded(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the method table's type, as above
  methods: ReadonlyMap<string, MethodHandler<any>>,
  scopes: ScopePolicy,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the method table's type, as above
): Map<string, MethodHandler<any>> {
  const grouped = new Set(Object.values(SCOPED_METHOD_GROUPS).flat());
  return new Map(
    [...methods].map(([name, method]) => [
      name,
      grouped.has(name)
        ? {
            params: method.params,
            handle(params: unknown, ctx: Parameters<typeof method.handle>[1]) {
              scopes.checkMethod(ctx.principal, name);
              return method.handle(params, ctx);
            },
          }
        : method,
    ]),
  );
}
