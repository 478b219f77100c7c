// Spec parity: for every method pgmcp serves, its zod wire schema for the params accepts what the
// official SDK's schema (@modelcontextprotocol/core) accepts: the same fields, the same ones
// required, each field the same type, compared as JSON Schema (zod's toJSONSchema). Where pgmcp
// follows the 2026-07-28 JSON schema over the SDK's two-era schemas, the exception is listed with
// its reason, must still be a difference, and must be what the JSON schema says (../shared/spec/,
// or MCP_SPEC_DIR; without it this file fails rather than pass with nothing checked).
import { readFileSync } from 'node:fs';
import * as official from '@modelcontextprotocol/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CallToolParamsSchema,
  CancelledParamsSchema,
  CompleteParamsSchema,
  EmptyParamsSchema,
  GetPromptParamsSchema,
  ListenParamsSchema,
  PaginatedParamsSchema,
  PROTOCOL_VERSION,
  ReadResourceParamsSchema,
} from '../../src/protocol/index.js';
import { call, startTestServer, type TestServer } from '../setup/harness.js';
import {
  SPEC_AVAILABLE,
  SPEC_SCHEMA_PATH,
  SPEC_SKIP_REASON,
} from '../setup/spec-schema.js';

interface Exceptions {
  /** Fields pgmcp accepts that the SDK's schema lacks, with why. */
  readonly extraFields?: Record<string, string>;
  /** Fields pgmcp requires that the SDK's schema leaves optional, with why. */
  readonly requiredHere?: Record<string, string>;
  /** Fields the SDK's schema accepts that pgmcp (and the 2026-07-28 JSON schema) do not, with why. */
  readonly droppedFields?: Record<string, string>;
}

interface Pair {
  readonly ours: z.ZodType;
  /** The official request or notification schema; its `params` are compared. */
  readonly official: z.ZodObject;
  /** The JSON schema's $defs entry for the params. */
  readonly def: string;
  readonly exceptions?: Exceptions;
}

/** pgmcp's params schema for each method it serves (requests) or accepts (notifications). */
const PAIRS: Record<string, Pair> = {
  'server/discover': {
    ours: EmptyParamsSchema,
    official: official.DiscoverRequestSchema,
    def: 'RequestParams',
  },
  'resources/list': {
    ours: PaginatedParamsSchema,
    official: official.ListResourcesRequestSchema,
    def: 'PaginatedRequestParams',
  },
  'resources/templates/list': {
    ours: PaginatedParamsSchema,
    official: official.ListResourceTemplatesRequestSchema,
    def: 'PaginatedRequestParams',
  },
  'resources/read': {
    ours: ReadResourceParamsSchema,
    official: official.ReadResourceRequestSchema,
    def: 'ReadResourceRequestParams',
    exceptions: {
      extraFields: {
        inputResponses:
          '2026-07-28 ReadResourceRequestParams defines it; the SDK schema does not yet',
        requestState:
          '2026-07-28 ReadResourceRequestParams defines it; the SDK schema does not yet',
      },
    },
  },
  'completion/complete': {
    ours: CompleteParamsSchema,
    official: official.CompleteRequestSchema,
    def: 'CompleteRequestParams',
  },
  'tools/list': {
    ours: PaginatedParamsSchema,
    official: official.ListToolsRequestSchema,
    def: 'PaginatedRequestParams',
  },
  'tools/call': {
    ours: CallToolParamsSchema,
    official: official.CallToolRequestSchema,
    def: 'CallToolRequestParams',
    exceptions: {
      extraFields: {
        inputResponses:
          '2026-07-28 CallToolRequestParams defines it; the SDK schema does not yet',
        requestState:
          '2026-07-28 CallToolRequestParams defines it; the SDK schema does not yet',
      },
      droppedFields: {
        task: '2025-11-25 tasks; 2026-07-28 CallToolRequestParams has no task field',
      },
    },
  },
  'prompts/list': {
    ours: PaginatedParamsSchema,
    official: official.ListPromptsRequestSchema,
    def: 'PaginatedRequestParams',
  },
  'prompts/get': {
    ours: GetPromptParamsSchema,
    official: official.GetPromptRequestSchema,
    def: 'GetPromptRequestParams',
    exceptions: {
      extraFields: {
        inputResponses:
          '2026-07-28 GetPromptRequestParams defines it; the SDK schema does not yet',
        requestState:
          '2026-07-28 GetPromptRequestParams defines it; the SDK schema does not yet',
      },
    },
  },
  'subscriptions/listen': {
    ours: ListenParamsSchema,
    official: official.SubscriptionsListenRequestSchema,
    def: 'SubscriptionsListenRequestParams',
  },
  'notifications/cancelled': {
    ours: CancelledParamsSchema,
    official: official.CancelledNotificationSchema,
    def: 'CancelledNotificationParams',
    exceptions: {
      requiredHere: {
        requestId:
          '2026-07-28 requires it; the SDK keeps it optional for 2025-11-25 task cancellation',
      },
    },
  },
};

type JsonSchema = {
  properties?: Record<string, unknown>;
  required?: string[];
  [key: string]: unknown;
};

/** JSON Schema of what `schema` accepts, without prose and without the `_meta` dispatch checks. */
function accepted(schema: z.ZodType): JsonSchema {
  const strip = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(strip);
    if (typeof value !== 'object' || value === null) return value;
    return Object.fromEntries(
      Object.entries(value)
        .filter(
          ([key]) =>
            !['description', '$schema', 'additionalProperties'].includes(key),
        )
        // A discriminated union converts to oneOf, a plain one to anyOf: the same when, as in
        // every union here, each branch has its own constant `type`.
        .map(([key, inner]) => [key === 'oneOf' ? 'anyOf' : key, strip(inner)]),
    );
  };
  const json = strip(
    z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }),
  ) as JsonSchema;
  const { _meta, ...properties } = json.properties ?? {};
  void _meta;
  return {
    ...json,
    properties,
    required: (json.required ?? []).filter((key) => key !== '_meta').sort(),
  };
}

/** The params schema of an official request or notification schema. */
function paramsOf(schema: z.ZodObject): z.ZodType {
  const params = schema.shape['params'] as z.ZodType;
  return params instanceof z.ZodOptional
    ? (params.unwrap() as z.ZodType)
    : params;
}

/** Every difference between what `ours` and `theirs` accept, less the listed exceptions. */
function divergences(
  ours: z.ZodType,
  theirs: z.ZodType,
  exceptions: Exceptions = {},
): string[] {
  const a = accepted(ours);
  const b = accepted(theirs);
  const found: string[] = [];
  const extra = exceptions.extraFields ?? {};
  const requiredHere = exceptions.requiredHere ?? {};
  const dropped = exceptions.droppedFields ?? {};
  const names = new Set([
    ...Object.keys(a.properties ?? {}),
    ...Object.keys(b.properties ?? {}),
  ]);
  for (const name of names) {
    const mine = a.properties?.[name];
    const spec = b.properties?.[name];
    if (spec === undefined) {
      if (extra[name] === undefined)
        found.push(`${name}: only pgmcp accepts it`);
    } else if (mine === undefined) {
      if (dropped[name] !== undefined) continue;
      found.push(`${name}: pgmcp drops it`);
    } else if (JSON.stringify(mine) !== JSON.stringify(spec))
      found.push(
        `${name}: pgmcp ${JSON.stringify(mine)}, official ${JSON.stringify(spec)}`,
      );
    const requiredMine = a.required?.includes(name) === true;
    const requiredSpec = b.required?.includes(name) === true;
    if (
      requiredMine !== requiredSpec &&
      !(requiredMine && name in requiredHere)
    )
      found.push(
        `${name}: ${requiredMine ? 'required' : 'optional'} in pgmcp, ${requiredSpec ? 'required' : 'optional'} officially`,
      );
  }
  for (const [key, value] of Object.entries(a))
    if (key !== 'properties' && key !== 'required')
      if (JSON.stringify(value) !== JSON.stringify(b[key]))
        found.push(
          `${key}: pgmcp ${JSON.stringify(value)}, official ${JSON.stringify(b[key])}`,
        );
  return found;
}

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

/** The official client request methods the running server answers with anything but -32601. */
async function servedMethods(): Promise<string[]> {
  const served: string[] = [];
  for (const option of official.ClientRequestSchema.options) {
    const method = (option.shape.method as z.ZodLiteral<string>).value;
    const { error } = await call(server.url, method, {}).catch(() => ({
      error: { code: 0 },
    }));
    if (error?.code !== -32601) served.push(method);
  }
  return served.sort();
}

describe('pgmcp’s wire schemas against the official SDK’s (@modelcontextprotocol/core)', () => {
  it('cover every method the server answers', async () => {
    const requests = Object.keys(PAIRS).filter(
      (method) => !method.startsWith('notifications/'),
    );
    expect(await servedMethods()).toEqual(requests.sort());
  });

  it.each(Object.entries(PAIRS))(
    '%s params: the same fields, required alike, each of the same type',
    (_, pair) => {
      expect(
        divergences(pair.ours, paramsOf(pair.official), pair.exceptions),
      ).toEqual([]);
    },
  );

  it.each(Object.entries(PAIRS).filter(([, pair]) => pair.exceptions))(
    '%s: each listed exception is still a real difference',
    (_, pair) => {
      const all = divergences(pair.ours, paramsOf(pair.official));
      for (const name of [
        ...Object.keys(pair.exceptions?.extraFields ?? {}),
        ...Object.keys(pair.exceptions?.requiredHere ?? {}),
        ...Object.keys(pair.exceptions?.droppedFields ?? {}),
      ])
        expect(
          all.some((line) => line.startsWith(`${name}:`)),
          name,
        ).toBe(true);
    },
  );

  it('finds a schema that drifted: a field retyped, dropped, added or made required', () => {
    const read = paramsOf(official.ReadResourceRequestSchema);
    expect(divergences(z.object({ uri: z.number() }), read)).toEqual([
      expect.stringMatching(/^uri: pgmcp .*number.*official .*string/),
    ]);
    expect(divergences(z.object({}), read)).toEqual([
      'uri: pgmcp drops it',
      'uri: optional in pgmcp, required officially',
    ]);
    expect(
      divergences(
        z.object({ uri: z.string(), page: z.number().optional() }),
        read,
      ),
    ).toEqual(['page: only pgmcp accepts it']);
    expect(
      divergences(
        PaginatedParamsSchema.extend({ cursor: z.string() }),
        paramsOf(official.ListResourcesRequestSchema),
      ),
    ).toEqual(['cursor: required in pgmcp, optional officially']);
  });
});

describe('against the JSON schema in ../shared/spec/ (or MCP_SPEC_DIR)', () => {
  it('names the same fields and requires the same (besides _meta, which dispatch checks)', () => {
    expect(SPEC_SCHEMA_PATH).toContain(`schema-${PROTOCOL_VERSION}.json`);
    // Absent, nothing would be checked: fail rather than pass empty.
    expect(SPEC_AVAILABLE, SPEC_SKIP_REASON).toBe(true);
    const defs = (
      JSON.parse(readFileSync(SPEC_SCHEMA_PATH, 'utf8')) as {
        $defs: Record<string, JsonSchema>;
      }
    ).$defs;
    for (const [method, pair] of Object.entries(PAIRS)) {
      const def = defs[pair.def];
      expect(def, `${method}: $defs.${pair.def}`).toBeDefined();
      const ours = accepted(pair.ours);
      const without = (keys: string[]) =>
        keys.filter((key) => key !== '_meta').sort();
      expect(Object.keys(ours.properties ?? {}).sort(), method).toEqual(
        without(Object.keys(def?.properties ?? {})),
      );
      expect(ours.required, method).toEqual(without(def?.required ?? []));
    }
    expect(defs['RequestMetaObject']?.required?.sort()).toEqual([
      'io.modelcontextprotocol/clientCapabilities',
      'io.modelcontextprotocol/protocolVersion',
    ]);
  });
});
