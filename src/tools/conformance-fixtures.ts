// The fixture tools the official MCP conformance suite calls (tools-list, tools-call-*), served only
// when the config file asks for them (the conformance seed's config), never in a real deployment.
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { streamedResponse, type RequestContext } from '../protocol/index.js';
import { SERVER_INFO } from '../version.js';
import {
  defineTool,
  textResult,
  toolError,
  type Tool,
  type ToolResult,
} from './tool.js';

/** A 1×1 PNG. */
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
/** A WAV of one silent 16-bit sample at 8 kHz. */
const WAV = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA==';

/** A conformance fixture takes no arguments. */
export const NO_ARGUMENTS = z.object({}).strict();

/** A fixture tool: no arguments, titled by its name. */
export function fixture(
  name: string,
  description: string,
  call: Tool<Record<string, never>>['call'],
): Tool {
  return defineTool({
    name,
    title: name,
    description,
    args: NO_ARGUMENTS,
    call,
  });
}

/** A fixture whose answer never changes. */
function constant(name: string, description: string, result: ToolResult): Tool {
  return fixture(name, description, () => Promise.resolve(result));
}

/**
 * The suite's json-schema-2020-12 scenario lists this tool and checks that its inputSchema keeps
 * the 2020-12 keywords (\$schema, \$defs with an \$anchor, allOf/anyOf, if/then/else,
 * additionalProperties); the schema is the one the scenario describes.
 */
const JSON_SCHEMA_2020_12_INPUT = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: {
    address: {
      $anchor: 'addressDef',
      type: 'object',
      properties: { street: { type: 'string' }, city: { type: 'string' } },
    },
  },
  properties: {
    name: { type: 'string' },
    address: { $ref: '#/$defs/address' },
    contactMethod: { type: 'string', enum: ['phone', 'email'] },
    phone: { type: 'string' },
    email: { type: 'string' },
  },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: {
    properties: { contactMethod: { const: 'phone' } },
    required: ['contactMethod'],
  },
  then: { required: ['phone'] },
  else: { required: ['email'] },
  additionalProperties: false,
};

const JSON_SCHEMA_2020_12_TOOL: Tool = defineTool({
  name: 'json_schema_2020_12_tool',
  title: 'json_schema_2020_12_tool',
  description:
    'Takes a contact whose schema uses JSON Schema 2020-12 keywords; echoes its name.',
  // The listed schema is the contract; zod checks only that the arguments are an object.
  args: z.record(z.string(), z.unknown()),
  inputSchema: JSON_SCHEMA_2020_12_INPUT,
  call: (args) => {
    const name = args['name'];
    return Promise.resolve(
      textResult(`contact: ${typeof name === 'string' ? name : ''}`),
    );
  },
});

/** The suite's fixture tools, in the order tools/list shows them. */
export function conformanceFixtureTools(): Tool[] {
  const embedded = (uri: string, mimeType: string, text: string) => ({
    type: 'resource',
    resource: { uri, mimeType, text },
  });
  return [
    JSON_SCHEMA_2020_12_TOOL,
    constant(
      'test_simple_text',
      'Returns a simple text response.',
      textResult('This is a simple text response for testing.'),
    ),
    constant('test_image_content', 'Returns a 1x1 PNG image.', {
      content: [{ type: 'image', data: PNG, mimeType: 'image/png' }],
    }),
    constant('test_audio_content', 'Returns a short WAV clip.', {
      content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }],
    }),
    constant('test_embedded_resource', 'Returns an embedded resource.', {
      content: [
        embedded(
          'test://embedded-resource',
          'text/plain',
          'This is an embedded resource content.',
        ),
      ],
    }),
    constant(
      'test_multiple_content_types',
      'Returns text, an image and an embedded resource.',
      {
        content: [
          { type: 'text', text: 'Multiple content types test:' },
          { type: 'image', data: PNG, mimeType: 'image/png' },
          embedded(
            'test://mixed-content-resource',
            'application/json',
            '{"test":"data","value":123}',
          ),
        ],
      },
    ),
    constant(
      'test_error_handling',
      'Always fails, as a tool error.',
      toolError('This tool intentionally returns an error for testing'),
    ),
    fixture(
      'test_tool_with_progress',
      'Reports progress 0, 50 and 100 of 100 when asked for progress.',
      (_args, ctx) => Promise.resolve(withProgress(ctx)),
    ),
  ];
}

/** Progress 0, 50, 100 of 100 on the request's own stream when the request carries a token. */
function withProgress(ctx: RequestContext) {
  const done = textResult('Progress tool completed.');
  const token = ctx.meta['progressToken'];
  if (typeof token !== 'string' && typeof token !== 'number') return done;
  return streamedResponse(ctx.id, SERVER_INFO, async ({ notify, signal }) => {
    for (const progress of [0, 50, 100]) {
      if (progress > 0) await delay(50, undefined, { signal });
      notify('notifications/progress', {
        progressToken: token,
        progress,
        total: 100,
      });
    }
    return { ...done };
  });
}
