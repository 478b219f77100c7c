// fetch (issue 15 point 2): one resource by URI, through resources/read itself, so it is authorized
// and fails exactly as a read does. The answer follows the contract ChatGPT's connectors publish for
// `fetch` (a JSON document id, title, text, url, metadata), plus the read's first contents embedded.
import { z } from 'zod';
import { ProtocolError } from '../errors.js';
import { RawJson, type RequestContext } from '../protocol/index.js';
import {
  defineTool,
  toolError,
  type InputRequiredResult,
  type Tool,
  type ToolInput,
} from './tool.js';

/** resources/read's handler, as the composition root hands it over (result before resultType). */
export type ReadResource = (
  uri: string,
  ctx: RequestContext,
  input?: ToolInput,
) => Promise<Record<string, unknown>>;

interface Contents {
  uri: string;
  mimeType?: string;
  text?: string;
  blob?: string;
  _meta?: Record<string, unknown>;
}

/** The fetched document's schema: the connector contract's fields (docs/tools.md "fetch"). */
export const FETCH_OUTPUT_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'The resource URI (what fetch took).' },
    title: { type: 'string' },
    text: { type: 'string', description: 'The full text of the resource.' },
    url: { type: 'string', description: 'The resource URI, for citation.' },
    metadata: { type: 'object', additionalProperties: true },
  },
  required: ['id', 'title', 'text', 'url', 'metadata'],
  additionalProperties: false,
};

const FetchArgsSchema = z
  .object({
    id: z
      .string()
      .min(1)
      .describe(
        'A resource URI: one a search result gave, or any URI resources/read accepts (notes:///…, file:///…, pg://database/schema/table, template instances).',
      ),
  })
  .strict();

/** The fetch tool over `read` (resources/read's handler). */
export function createFetchTool(read: ReadResource): Tool {
  return defineTool({
    name: 'fetch',
    title: 'Fetch a resource',
    description:
      'Fetch the full text of one resource by its URI (the id a search result gave). Returns the document as JSON: id, title, text, url, metadata.',
    args: FetchArgsSchema,
    outputSchema: FETCH_OUTPUT_SCHEMA,
    async call({ id }, ctx, input) {
      const result = await readUnlessSensitive(read, { id, input }, ctx);
      // Sensitive data is read only after a person gave a reason: the read's question (and its
      // requestState) is fetch's, and the retry carries the answer back to the read.
      if (result === undefined)
        return toolError(
          `${id} is marked sensitive: reading it needs a person's consent, asked through form elicitation, which this client did not declare.`,
        );
      if (result['resultType'] === 'input_required')
        return result as unknown as InputRequiredResult;
      const contents = contentsOf(result);
      const first = contents[0] as Contents;
      const document = {
        id,
        title: titleOf(first),
        text: first.text ?? describeBlob(first),
        url: id,
        metadata: {
          mimeType: first.mimeType ?? null,
          ...(contents.length > 1
            ? { children: contents.slice(1).map((entry) => entry.uri) }
            : {}),
        },
      };
      return {
        content: [
          { type: 'text', text: JSON.stringify(document) },
          { type: 'resource', resource: first },
        ],
        structuredContent: document,
      };
    },
  });
}

/** The contents array of a read result (pre-serialized by resources/ as RawJson). */
/**
 * The read's result (input_required while a person's consent is asked, issue 17), or undefined
 * when the resource needs consent that this client cannot be asked for.
 */
async function readUnlessSensitive(
  read: ReadResource,
  { id, input }: { readonly id: string; readonly input: ToolInput },
  ctx: RequestContext,
): Promise<Record<string, unknown> | undefined> {
  try {
    return await read(id, ctx, input);
  } catch (error) {
    if (
      error instanceof ProtocolError &&
      error.key === 'MISSING_CLIENT_CAPABILITY'
    )
      return undefined;
    throw error;
  }
}

function contentsOf(result: Record<string, unknown>): Contents[] {
  const contents = result['contents'];
  return (
    contents instanceof RawJson ? JSON.parse(contents.json) : contents
  ) as Contents[];
}

/** A title from the resource itself: its first Markdown heading, else the last segment of its URI. */
function titleOf(contents: Contents): string {
  const heading = /^#{1,6}\s+(.+)$/m.exec(contents.text?.slice(0, 2000) ?? '');
  if (heading?.[1] !== undefined) return heading[1].trim();
  const segments = contents.uri.split('/').filter((part) => part !== '');
  const last = segments.at(-1) ?? contents.uri;
  try {
    return decodeURIComponent(last);
  } catch {
    return last;
  }
}

function describeBlob(contents: Contents): string {
  const bytes = Math.floor(((contents.blob?.length ?? 0) * 3) / 4);
  return `(binary ${contents.mimeType ?? 'data'}, about ${bytes} bytes: the embedded resource carries it)`;
}
