// tools/list and tools/call over a fixed set of tools. Without a scope map the list is the same
// for every caller and the life of the process (tools are switched off in the config file, not per
// role), so it is serialized once and cacheable by anyone; with one, each caller sees the tools its
// scopes allow. Each call runs as the caller's principal.
import type { ScopePolicy } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import { METRICS, traceStep } from '../observability/index.js';
import {
  CallToolParamsSchema,
  createMethod,
  PaginatedParamsSchema,
  RawJson,
  StreamingResult,
  type CallToolParams,
  type MethodHandler,
  type PaginatedParams,
} from '../protocol/index.js';
import { jsonSchemaOf, toolError, type Tool } from './tool.js';

/** How long a tools/list answer stays fresh: the list changes only with a restart. */
export const TOOLS_TTL_MS = 300_000;

/** Every pgmcp tool only reads, and only the databases it serves (issue 15 point 5). */
const ANNOTATIONS = { readOnlyHint: true, openWorldHint: false } as const;

/** ProtocolErrors a tool's work may raise that the model should see and can act on. */
const CALLER_FAULTS = new Set([
  'INVALID_PARAMS',
  'INVALID_URI',
  'RESOURCE_NOT_FOUND',
  'FORBIDDEN',
  'TIMEOUT',
]);

/**
 * tools/list: one page, in registration order (deterministic, spec §10). With an active scope
 * policy, only the tools the caller's scopes allow, and private to it (spec §6.1: lists may vary
 * by the authorization on the request).
 */
export function createListToolsMethod(
  tools: readonly Tool[],
  scopes?: ScopePolicy,
): MethodHandler<PaginatedParams> {
  checkNames(tools);
  const entries = tools.map((tool) => ({
    name: tool.name,
    json: JSON.stringify({
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: tool.inputSchema ?? jsonSchemaOf(tool.args),
      ...(tool.outputSchema === undefined
        ? {}
        : { outputSchema: tool.outputSchema }),
      annotations: { title: tool.title, ...ANNOTATIONS },
    }),
  }));
  const listOf = (shown: typeof entries): RawJson =>
    new RawJson(`[${shown.map((entry) => entry.json).join(',')}]`);
  const list = listOf(entries);
  const perCaller = scopes?.active === true ? scopes : undefined;
  return createMethod({
    params: PaginatedParamsSchema,
    // The one page is the same for every caller: serialized once (a cursor is refused below).
    ...(perCaller === undefined
      ? {
          constantFor: (params: PaginatedParams) => params.cursor === undefined,
        }
      : {}),
    handle(params, ctx) {
      // There is only ever one page: a cursor cannot have come from this server.
      if (params.cursor !== undefined)
        throw new ProtocolError(
          'INVALID_CURSOR',
          'Invalid cursor: tools/list has a single page.',
        );
      if (perCaller === undefined)
        return Promise.resolve({
          tools: list,
          ttlMs: TOOLS_TTL_MS,
          cacheScope: 'public',
        });
      return Promise.resolve({
        tools: listOf(
          entries.filter((entry) =>
            perCaller.allowsTool(ctx.principal, entry.name),
          ),
        ),
        ttlMs: TOOLS_TTL_MS,
        cacheScope: 'private',
      });
    },
  });
}

/**
 * tools/call: an unknown tool is -32602 (a protocol error, spec §6), a tool the caller's scopes do
 * not allow is INSUFFICIENT_SCOPE (HTTP 403); arguments its schema refuses
 * and the caller faults of its work (a URI not found, a denied read) are results with isError, so
 * the model sees them and can correct the call.
 */
export function createCallToolMethod(
  tools: readonly Tool[],
  scopes?: ScopePolicy,
): MethodHandler<CallToolParams> {
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  return createMethod({
    params: CallToolParamsSchema,
    async handle(params, ctx) {
      const tool = byName.get(params.name);
      if (tool === undefined)
        throw new ProtocolError(
          'INVALID_PARAMS',
          `Unknown tool: ${params.name.slice(0, 100)}.`,
          { data: { name: params.name.slice(0, 100) } },
        );
      // A JSON-RPC error, not a tool result: over HTTP it is the 403 step-up challenge (spec §15).
      scopes?.checkTool(ctx.principal, tool.name);
      const parsed = tool.args.safeParse(withoutNulls(params.arguments ?? {}));
      if (!parsed.success)
        return { ...toolError(`Invalid arguments: ${issues(parsed.error)}.`) };
      return traceStep(
        `execute_tool ${tool.name}`,
        {
          'gen_ai.tool.name': tool.name,
          'gen_ai.operation.name': 'execute_tool',
        },
        async () => {
          try {
            const result = await tool.call(parsed.data, ctx, {
              inputResponses: params.inputResponses,
              requestState: params.requestState,
            });
            if (result instanceof StreamingResult) return result;
            countCall(tool.name, result);
            return { ...result };
          } catch (error) {
            if (
              error instanceof ProtocolError &&
              CALLER_FAULTS.has(error.key)
            ) {
              METRICS.toolCalls.inc({ tool: tool.name, outcome: 'tool_error' });
              return { ...toolError(faultText(error)) };
            }
            METRICS.toolCalls.inc({ tool: tool.name, outcome: 'error' });
            throw error;
          }
        },
      );
    },
  });
}

/**
 * The arguments with every top-level `null` left out: a client that sends `null` for an optional
 * argument means "not given" (issue 32 point 6). A required argument sent as null is then missing,
 * and refused as such.
 */
function withoutNulls(args: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(args).filter(([, value]) => value !== null),
  );
}

/** Issue 35: the call's outcome, its rows (query's rows, search's results) and its text's bytes. */
function countCall(name: string, answer: object): void {
  const result = answer as {
    readonly content?: readonly unknown[];
    readonly structuredContent?: Record<string, unknown>;
    readonly isError?: boolean;
  };
  METRICS.toolCalls.inc({
    tool: name,
    outcome: result.isError === true ? 'tool_error' : 'ok',
  });
  const structured = result.structuredContent;
  const rows = structured?.['rows'] ?? structured?.['results'];
  if (Array.isArray(rows)) METRICS.toolRows.inc({ tool: name }, rows.length);
  let bytes = 0;
  for (const part of result.content ?? []) {
    const text = (part as { text?: unknown }).text;
    if (typeof text === 'string') bytes += Buffer.byteLength(text);
  }
  METRICS.toolBytes.inc({ tool: name }, bytes);
}

/** The error's message, naming the URI it was about (resources/read puts it in `data`). */
function faultText(error: ProtocolError): string {
  const uri = error.data?.['uri'];
  return typeof uri === 'string'
    ? `${error.message} (${uri.slice(0, 500)})`
    : error.message;
}

function checkNames(tools: readonly Tool[]): void {
  const seen = new Set<string>();
  for (const { name } of tools) {
    // A programming error, caught by the first test that builds the list.
    if (!/^[A-Za-z0-9_.-]{1,128}$/.test(name) || seen.has(name))
      throw new Error(`tool name ${name} is invalid or repeated`);
    seen.add(name);
  }
}

function issues(error: {
  issues: readonly { path: readonly PropertyKey[]; message: string }[];
}): string {
  return error.issues
    .slice(0, 3)
    .map((issue) =>
      issue.path.length === 0
        ? issue.message
        : `${issue.path.map(String).join('.')}: ${issue.message}`,
    )
    .join('; ');
}
