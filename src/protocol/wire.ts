// Zod schemas for the JSON-RPC envelope and the MCP 2026-07-28 request params we serve.
// Unknown fields are ignored (zod objects strip by default); wrong types name the field.
import { z } from 'zod';

export const PROTOCOL_VERSION = '2026-07-28';
export const SUPPORTED_VERSIONS: readonly string[] = [PROTOCOL_VERSION];

export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CLIENT_CAPABILITIES =
  'io.modelcontextprotocol/clientCapabilities';
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo';

// A lone surrogate has no UTF-8 form (encodeURIComponent throws on it, Postgres never sees it as
// sent) and Postgres text cannot hold NUL (SQLSTATE 22021): a string param with either names
// nothing that can exist, so it is refused as -32602 naming the field, before any handler runs.
const UNSTORABLE = /[\u0000\uD800-\uDFFF]/u;

/** A string param a client sends: well-formed Unicode without NUL. */
export function clientString() {
  return z
    .string()
    .refine(
      (value) => !UNSTORABLE.test(value),
      'must be well-formed Unicode without NUL characters',
    );
}

export const RequestIdSchema = z.union([z.string(), z.number().int()]);
export type RequestId = z.infer<typeof RequestIdSchema>;

/** One inbound message: a request (has id) or a notification (no id). Checked by dispatch's parse. */
export interface InboundMessage {
  jsonrpc: '2.0';
  id?: RequestId | undefined;
  method: string;
  params?: Record<string, unknown> | undefined;
}

/** Required per-request `_meta` (RequestMetaObject); other keys pass through untouched. */
export interface RequestMeta {
  [META_PROTOCOL_VERSION]: string;
  [META_CLIENT_CAPABILITIES]: Record<string, unknown>;
  [key: string]: unknown;
}

export const PaginatedParamsSchema = z.object({
  cursor: clientString().optional(),
});
export type PaginatedParams = z.infer<typeof PaginatedParamsSchema>;

export const ReadResourceParamsSchema = z.object({
  uri: clientString(),
  inputResponses: z.record(clientString(), z.unknown()).optional(),
  requestState: clientString().optional(),
});
export type ReadResourceParams = z.infer<typeof ReadResourceParamsSchema>;

export const EmptyParamsSchema = z.object({});

/** tools/call (spec §6): the tool's name and its arguments, checked by the tool's own schema. */
export const CallToolParamsSchema = z.object({
  name: clientString(),
  arguments: z.record(z.string(), z.unknown()).optional(),
  inputResponses: z.record(clientString(), z.unknown()).optional(),
  requestState: clientString().optional(),
});
export type CallToolParams = z.infer<typeof CallToolParamsSchema>;
/** prompts/get (spec §8.2): a prompt by name, its arguments' values as strings. */
export const GetPromptParamsSchema = z.object({
  name: clientString(),
  arguments: z.record(clientString(), clientString()).optional(),
  inputResponses: z.record(clientString(), z.unknown()).optional(),
  requestState: clientString().optional(),
});
export type GetPromptParams = z.infer<typeof GetPromptParamsSchema>;

/** completion/complete (spec §9): a prompt or a resource template, one argument, earlier ones. */
export const CompleteParamsSchema = z.object({
  ref: z.discriminatedUnion('type', [
    z.object({ type: z.literal('ref/prompt'), name: clientString() }),
    z.object({ type: z.literal('ref/resource'), uri: clientString() }),
  ]),
  argument: z.object({ name: clientString(), value: clientString() }),
  context: z
    .object({
      arguments: z.record(clientString(), clientString()).optional(),
    })
    .optional(),
});
export type CompleteParams = z.infer<typeof CompleteParamsSchema>;

export const CancelledParamsSchema = z.object({
  requestId: RequestIdSchema,
  reason: z.string().optional(),
});

/** Result fields every cacheable complete result carries (CacheableResult). */
export interface Cacheable {
  ttlMs: number;
  cacheScope: 'public' | 'private';
}

export interface Implementation {
  name: string;
  version: string;
  title?: string;
  description?: string;
  websiteUrl?: string;
}

export interface Annotations {
  audience?: ('user' | 'assistant')[];
  priority?: number;
  lastModified?: string;
}

export interface ResourceTemplate {
  uriTemplate: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  annotations?: Annotations;
}

/**
 * Headers a Streamable HTTP request must carry, derived from its body (spec §14.2):
 * `MCP-Protocol-Version` = `_meta` version, `Mcp-Method` = method, and `Mcp-Name` for the three
 * methods that name a target. Transports compare; only this module knows which method needs what.
 */
export function expectedHttpHeaders(message: InboundMessage): {
  protocolVersion: unknown;
  method: string;
  name: { field: 'uri' | 'name'; value: unknown } | undefined;
} {
  const meta = message.params?.['_meta'];
  const protocolVersion =
    typeof meta === 'object' && meta !== null
      ? (meta as Record<string, unknown>)[META_PROTOCOL_VERSION]
      : undefined;
  let name: { field: 'uri' | 'name'; value: unknown } | undefined;
  if (message.method === 'resources/read')
    name = { field: 'uri', value: message.params?.['uri'] };
  else if (message.method === 'prompts/get' || message.method === 'tools/call')
    name = { field: 'name', value: message.params?.['name'] };
  return { protocolVersion, method: message.method, name };
}

/** The id of a malformed message when it is still readable, so its error can echo it. */
export function readableId(value: unknown): RequestId | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return undefined;
  const parsed = RequestIdSchema.safeParse(
    (value as Record<string, unknown>)['id'],
  );
  return parsed.success ? parsed.data : undefined;
}
