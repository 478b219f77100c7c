// Validates every response and notification the tests see against the official MCP schemas:
// always against the zod schemas of the official SDKs (@modelcontextprotocol/core for 2026-07-28,
// the v1 @modelcontextprotocol/sdk for 2025-11-25, both pinned in package.json), and also against
// each era's JSON schema in ../shared/spec/ (or MCP_SPEC_DIR) where that folder exists (it is not
// part of this repository, so a clone elsewhere checks messages against the SDKs' schemas alone;
// test/protocol/spec-parity.test.ts fails there). A message no schema covers fails.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as official from '@modelcontextprotocol/core';
// The v1 SDK speaks 2025-11-25: its zod schemas are the legacy era's (issue 14).
import * as legacySdk from '@modelcontextprotocol/sdk/types.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import type { z } from 'zod';
import { PROJECT_ROOT } from '../../src/version.js';

export const SPEC_SCHEMA_PATH = path.resolve(
  process.env['MCP_SPEC_DIR'] ??
    path.join(PROJECT_ROOT, '..', 'shared', 'spec'),
  'schema-2026-07-28.json',
);
/** The 2025-11-25 JSON schema, for legacy traffic (issue 14). */
export const LEGACY_SPEC_SCHEMA_PATH = path.resolve(
  SPEC_SCHEMA_PATH,
  '..',
  'schema-2025-11-25.json',
);

/** Which era's schemas a message is checked against. */
export type Era = 'modern' | 'legacy';

/** Whether the JSON schema (the second check) is present; the SDK's schemas always are. */
export const SPEC_AVAILABLE = existsSync(SPEC_SCHEMA_PATH);
/** The same for the 2025-11-25 JSON schema; the v1 SDK's schemas always are. */
const LEGACY_SPEC_AVAILABLE = existsSync(LEGACY_SPEC_SCHEMA_PATH);
export const SPEC_SKIP_REASON = `official JSON schema not found at ${SPEC_SCHEMA_PATH} (shared/spec/ sits beside the checkout in CI; MCP_SPEC_DIR names another folder); responses are checked against @modelcontextprotocol/core's schemas only`;

/** The official result schema (SDK) and $defs entry (JSON schema) of each method pgmcp serves. */
export const RESULT_SCHEMAS: Record<string, { sdk: z.ZodType; def: string }> = {
  'server/discover': {
    sdk: official.DiscoverResultSchema,
    def: 'DiscoverResultResponse',
  },
  'resources/list': {
    sdk: official.ListResourcesResultSchema,
    def: 'ListResourcesResultResponse',
  },
  'resources/templates/list': {
    sdk: official.ListResourceTemplatesResultSchema,
    def: 'ListResourceTemplatesResultResponse',
  },
  'resources/read': {
    sdk: official.ReadResourceResultSchema,
    def: 'ReadResourceResultResponse',
  },
  'subscriptions/listen': {
    sdk: official.SubscriptionsListenResultSchema,
    def: 'SubscriptionsListenResultResponse',
  },
  'completion/complete': {
    sdk: official.CompleteResultSchema,
    def: 'CompleteResultResponse',
  },
  'tools/list': {
    sdk: official.ListToolsResultSchema,
    def: 'ListToolsResultResponse',
  },
  'tools/call': {
    sdk: official.CallToolResultSchema,
    def: 'CallToolResultResponse',
  },
  'prompts/list': {
    sdk: official.ListPromptsResultSchema,
    def: 'ListPromptsResultResponse',
  },
  'prompts/get': {
    sdk: official.GetPromptResultSchema,
    def: 'GetPromptResultResponse',
  },
};

/** The official schema of each notification the server may send. */
export const NOTIFICATION_SCHEMAS: Record<
  string,
  { sdk: z.ZodType; def: string }
> = {
  'notifications/subscriptions/acknowledged': {
    sdk: official.SubscriptionsAcknowledgedNotificationSchema,
    def: 'SubscriptionsAcknowledgedNotification',
  },
  'notifications/resources/updated': {
    sdk: official.ResourceUpdatedNotificationSchema,
    def: 'ResourceUpdatedNotification',
  },
  'notifications/resources/list_changed': {
    sdk: official.ResourceListChangedNotificationSchema,
    def: 'ResourceListChangedNotification',
  },
  'notifications/prompts/list_changed': {
    sdk: official.PromptListChangedNotificationSchema,
    def: 'PromptListChangedNotification',
  },
  'notifications/cancelled': {
    sdk: official.CancelledNotificationSchema,
    def: 'CancelledNotification',
  },
  // Only on a request's own stream, before its response (spec §11, §12).
  'notifications/progress': {
    sdk: official.ProgressNotificationSchema,
    def: 'ProgressNotification',
  },
  'notifications/message': {
    sdk: official.LoggingMessageNotificationSchema,
    def: 'LoggingMessageNotification',
  },
};

/** 2025-11-25 result schemas (v1 SDK and the JSON schema's $defs) of each method served to legacy. */
const LEGACY_RESULT_SCHEMAS: Record<string, { sdk: z.ZodType; def: string }> = {
  initialize: {
    sdk: legacySdk.InitializeResultSchema,
    def: 'InitializeResult',
  },
  ping: {
    sdk: legacySdk.EmptyResultSchema,
    def: 'EmptyResult',
  },
  'resources/list': {
    sdk: legacySdk.ListResourcesResultSchema,
    def: 'ListResourcesResult',
  },
  'resources/templates/list': {
    sdk: legacySdk.ListResourceTemplatesResultSchema,
    def: 'ListResourceTemplatesResult',
  },
  'resources/read': {
    sdk: legacySdk.ReadResourceResultSchema,
    def: 'ReadResourceResult',
  },
  'completion/complete': {
    sdk: legacySdk.CompleteResultSchema,
    def: 'CompleteResult',
  },
  'prompts/list': {
    sdk: legacySdk.ListPromptsResultSchema,
    def: 'ListPromptsResult',
  },
  'prompts/get': {
    sdk: legacySdk.GetPromptResultSchema,
    def: 'GetPromptResult',
  },
  'resources/subscribe': {
    sdk: legacySdk.EmptyResultSchema,
    def: 'EmptyResult',
  },
  'resources/unsubscribe': {
    sdk: legacySdk.EmptyResultSchema,
    def: 'EmptyResult',
  },
  'logging/setLevel': {
    sdk: legacySdk.EmptyResultSchema,
    def: 'EmptyResult',
  },
  'tools/list': {
    sdk: legacySdk.ListToolsResultSchema,
    def: 'ListToolsResult',
  },
  'tools/call': {
    sdk: legacySdk.CallToolResultSchema,
    def: 'CallToolResult',
  },
};

const LEGACY_NOTIFICATION_SCHEMAS: Record<
  string,
  { sdk: z.ZodType; def: string }
> = {
  'notifications/resources/updated': {
    sdk: legacySdk.ResourceUpdatedNotificationSchema,
    def: 'ResourceUpdatedNotification',
  },
  'notifications/resources/list_changed': {
    sdk: legacySdk.ResourceListChangedNotificationSchema,
    def: 'ResourceListChangedNotification',
  },
  'notifications/prompts/list_changed': {
    sdk: legacySdk.PromptListChangedNotificationSchema,
    def: 'PromptListChangedNotification',
  },
  'notifications/message': {
    sdk: legacySdk.LoggingMessageNotificationSchema,
    def: 'LoggingMessageNotification',
  },
  'notifications/progress': {
    sdk: legacySdk.ProgressNotificationSchema,
    def: 'ProgressNotification',
  },
};

/** 2026-07-28 names that must never reach a legacy client, anywhere in a message. */
const MODERN_ONLY =
  /"(resultType|ttlMs|cacheScope|io\.modelcontextprotocol\/[A-Za-z]+)"\s*:/;
const MODERN_ONLY_CODES = new Set([-32020, -32021, -32022]);

function assertNothingModern(message: unknown): void {
  const json = JSON.stringify(message);
  const found = MODERN_ONLY.exec(json);
  if (found !== null)
    throw new Error(
      `a legacy message carries the 2026-07-28 field ${found[1]}: ${json.slice(0, 500)}`,
    );
  const code = (message as { error?: { code?: number } }).error?.code;
  if (code !== undefined && MODERN_ONLY_CODES.has(code))
    throw new Error(
      `a legacy message carries the 2026-07-28 error code ${code}`,
    );
}

/** Assert a message sent to a 2025-11-25 client validates against that era's schemas. */
function assertValidLegacy(
  kind: 'response' | 'notification',
  method: string | undefined,
  message: unknown,
): void {
  assertNothingModern(message);
  const body = message as { error?: unknown; result?: unknown };
  if (kind === 'notification') {
    const schemas =
      method === undefined ? undefined : LEGACY_NOTIFICATION_SCHEMAS[method];
    if (schemas === undefined)
      throw new Error(
        `unexpected legacy notification: ${JSON.stringify(message)}`,
      );
    check(legacySdk.JSONRPCNotificationSchema, message, 'legacy notification');
    check(schemas.sdk, message, `${method} legacy notification`);
    if (LEGACY_SPEC_AVAILABLE)
      validateJson(['JSONRPCNotification', schemas.def], message, 'legacy');
    return;
  }
  if (body.error !== undefined) {
    check(legacySdk.JSONRPCErrorResponseSchema, message, 'legacy error');
    if (LEGACY_SPEC_AVAILABLE)
      validateJson(['JSONRPCErrorResponse'], message, 'legacy');
    return;
  }
  const schemas =
    method === undefined ? undefined : LEGACY_RESULT_SCHEMAS[method];
  if (schemas === undefined)
    throw new Error(
      `a legacy result for ${method ?? 'an unnamed method'}, which has no 2025-11-25 result schema here`,
    );
  check(legacySdk.JSONRPCResultResponseSchema, message, 'legacy response');
  check(schemas.sdk, body.result, `${method} legacy result`);
  if (LEGACY_SPEC_AVAILABLE) {
    validateJson(['JSONRPCResultResponse'], message, 'legacy');
    validateJson([schemas.def], body.result, 'legacy');
  }
}

function check(schema: z.ZodType, value: unknown, what: string): void {
  const parsed = schema.safeParse(value);
  if (!parsed.success)
    throw new Error(
      `${what} does not match @modelcontextprotocol/core's schema: ${JSON.stringify(parsed.error.issues.slice(0, 5))}\n${JSON.stringify(value).slice(0, 500)}`,
    );
}

/**
 * Assert that a notification the server sent is valid per the official schemas and is one the
 * server may send; throws otherwise.
 */
export function assertValidNotification(
  message: unknown,
  era: Era = 'modern',
): void {
  const method = (message as { method?: unknown }).method;
  if (era === 'legacy') {
    assertValidLegacy(
      'notification',
      typeof method === 'string' ? method : undefined,
      message,
    );
    return;
  }
  const schemas =
    typeof method === 'string' ? NOTIFICATION_SCHEMAS[method] : undefined;
  if (schemas === undefined)
    throw new Error(
      `unexpected server notification: ${JSON.stringify(message)}`,
    );
  check(official.JSONRPCNotificationSchema, message, 'notification');
  check(schemas.sdk, message, `${String(method)} notification`);
  if (SPEC_AVAILABLE)
    validateJson(['JSONRPCNotification', schemas.def], message);
}

/** The methods that may answer `resultType: "input_required"` (spec §4.2). */
const INPUT_REQUIRED_METHODS = new Set([
  'resources/read',
  'prompts/get',
  'tools/call',
]);

/** Error codes with their own $defs entry. */
const ERROR_DEFS: Record<number, string> = {
  [-32022]: 'UnsupportedProtocolVersionError',
  [-32020]: 'HeaderMismatchError',
};

/**
 * Assert that `message` (one JSON-RPC response the server sent for `method`) is valid per the
 * official schemas; throws if not. A result for a method with no official result schema (or
 * for no known method) throws too.
 */
export function assertValidResponse(
  method: string | undefined,
  message: unknown,
  era: Era = 'modern',
): void {
  if (era === 'legacy') {
    assertValidLegacy('response', method, message);
    return;
  }
  const body = message as { error?: { code?: number }; result?: unknown };
  const defs = ['JSONRPCResponse'];
  if (body.error !== undefined) {
    check(official.JSONRPCErrorResponseSchema, message, 'error response');
    defs.push('JSONRPCErrorResponse');
    const specific = ERROR_DEFS[body.error.code ?? 0];
    if (specific !== undefined) defs.push(specific);
  } else {
    const schemas = method === undefined ? undefined : RESULT_SCHEMAS[method];
    if (schemas === undefined)
      throw new Error(
        `a result for ${method ?? 'an unnamed method'}, which has no official result schema here: ${JSON.stringify(message).slice(0, 500)}`,
      );
    check(official.JSONRPCResultResponseSchema, message, 'response');
    const inputRequired =
      (body.result as { resultType?: unknown } | undefined)?.resultType ===
      'input_required';
    // Spec §4.2: only these three may ask for input; the SDK has no zod schema for the result.
    if (inputRequired) {
      if (!INPUT_REQUIRED_METHODS.has(method ?? ''))
        throw new Error(`${String(method)} may not answer input_required`);
      if (SPEC_AVAILABLE) validateJson(['InputRequiredResult'], body.result);
    } else {
      check(schemas.sdk, body.result, `${method} result`);
      defs.push(schemas.def);
    }
  }
  if (SPEC_AVAILABLE) validateJson(defs, message);
}

function validateJson(
  defs: string[],
  message: unknown,
  era: Era = 'modern',
): void {
  for (const def of defs) {
    const validate = compiled(def, era);
    if (!validate(message)) {
      throw new Error(
        `message does not match schema ${def}: ${JSON.stringify(validate.errors?.slice(0, 5))}\n${JSON.stringify(message).slice(0, 500)}`,
      );
    }
  }
}

const compiledDefs = new Map<string, ValidateFunction>();
const ajvs = new Map<Era, Ajv2020>();

function compiled(def: string, era: Era): ValidateFunction {
  let ajv = ajvs.get(era);
  if (ajv === undefined) {
    const schema = JSON.parse(
      readFileSync(
        era === 'legacy' ? LEGACY_SPEC_SCHEMA_PATH : SPEC_SCHEMA_PATH,
        'utf8',
      ),
    ) as Record<string, unknown>;
    ajv = new Ajv2020({ strict: false, allErrors: true });
    ajvs.set(era, ajv);
    // ajv-formats is CommonJS; under ESM its function may arrive wrapped in `default`.
    const addFormats = ((addFormatsModule as unknown as { default?: unknown })
      .default ?? addFormatsModule) as (instance: Ajv2020) => void;
    addFormats(ajv);
    ajv.addSchema(schema, 'mcp');
  }
  let validate = compiledDefs.get(`${era}:${def}`);
  if (validate === undefined) {
    validate = ajv.compile({ $ref: `mcp#/$defs/${def}` });
    compiledDefs.set(`${era}:${def}`, validate);
  }
  return validate;
}
