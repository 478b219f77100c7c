// Validates every response the tests see against the official MCP 2026-07-28 JSON schema in
// ../shared/spec/. Where that folder is absent (it is not part of this repository), checks are
// skipped and SPEC_SKIP_REASON says why.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import { PROJECT_ROOT } from '../../src/version.js';

export const SPEC_SCHEMA_PATH = path.resolve(
  PROJECT_ROOT,
  '..',
  'shared',
  'spec',
  'schema-2026-07-28.json',
);
export const SPEC_AVAILABLE = existsSync(SPEC_SCHEMA_PATH);
export const SPEC_SKIP_REASON = `official schema not found at ${SPEC_SCHEMA_PATH} (shared/spec/ sits beside the checkout in CI); schema checks skipped`;

/** Which $defs entry a successful result of each method must match. */
const RESULT_DEFS: Record<string, string> = {
  'server/discover': 'DiscoverResultResponse',
  'resources/list': 'ListResourcesResultResponse',
  'resources/templates/list': 'ListResourceTemplatesResultResponse',
  'resources/read': 'ReadResourceResultResponse',
  'subscriptions/listen': 'SubscriptionsListenResultResponse',
  'completion/complete': 'CompleteResultResponse',
};

/** Which $defs entry each server notification must match. */
const NOTIFICATION_DEFS: Record<string, string> = {
  'notifications/subscriptions/acknowledged':
    'SubscriptionsAcknowledgedNotification',
  'notifications/resources/updated': 'ResourceUpdatedNotification',
  'notifications/resources/list_changed': 'ResourceListChangedNotification',
  'notifications/cancelled': 'CancelledNotification',
};

/**
 * Assert that a notification the server sent is valid per the official schema, and is one the
 * server may send (a method with a schema entry). Returns false when the schema is unavailable.
 */
export function assertValidNotification(message: unknown): boolean {
  if (!SPEC_AVAILABLE) return false;
  const method = (message as { method?: unknown }).method;
  const def =
    typeof method === 'string' ? NOTIFICATION_DEFS[method] : undefined;
  if (def === undefined)
    throw new Error(
      `unexpected server notification: ${JSON.stringify(message)}`,
    );
  for (const name of ['JSONRPCNotification', def]) {
    const validate = compiled(name);
    if (!validate(message))
      throw new Error(
        `notification does not match schema ${name}: ${JSON.stringify(validate.errors?.slice(0, 5))}\n${JSON.stringify(message).slice(0, 500)}`,
      );
  }
  return true;
}

/** Error codes with their own $defs entry. */
const ERROR_DEFS: Record<number, string> = {
  [-32022]: 'UnsupportedProtocolVersionError',
  [-32020]: 'HeaderMismatchError',
};

/**
 * Assert that `message` (one JSON-RPC response the server sent for `method`) is valid per the
 * official schema; throws with ajv's errors if not. Returns false when the schema is unavailable.
 */
export function assertValidResponse(
  method: string | undefined,
  message: unknown,
): boolean {
  if (!SPEC_AVAILABLE) return false;
  const body = message as { error?: { code?: number }; result?: unknown };
  const defs = ['JSONRPCResponse'];
  if (body.error !== undefined) {
    defs.push('JSONRPCErrorResponse');
    const specific = ERROR_DEFS[body.error.code ?? 0];
    if (specific !== undefined) defs.push(specific);
  } else if (method !== undefined && RESULT_DEFS[method] !== undefined) {
    defs.push(RESULT_DEFS[method] as string);
  }
  for (const def of defs) {
    const validate = compiled(def);
    if (!validate(message)) {
      throw new Error(
        `response does not match schema ${def}: ${JSON.stringify(validate.errors?.slice(0, 5))}\n${JSON.stringify(message).slice(0, 500)}`,
      );
    }
  }
  return true;
}

const compiledDefs = new Map<string, ValidateFunction>();
let ajv: Ajv2020 | undefined;

function compiled(def: string): ValidateFunction {
  if (ajv === undefined) {
    const schema = JSON.parse(readFileSync(SPEC_SCHEMA_PATH, 'utf8')) as Record<
      string,
      unknown
    >;
    ajv = new Ajv2020({ strict: false, allErrors: true });
    // ajv-formats is CommonJS; under ESM its function may arrive wrapped in `default`.
    const addFormats = ((addFormatsModule as unknown as { default?: unknown })
      .default ?? addFormatsModule) as (instance: Ajv2020) => void;
    addFormats(ajv);
    ajv.addSchema(schema, 'mcp');
  }
  let validate = compiledDefs.get(def);
  if (validate === undefined) {
    validate = ajv.compile({ $ref: `mcp#/$defs/${def}` });
    compiledDefs.set(def, validate);
  }
  return validate;
}
