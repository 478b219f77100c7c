// What a tool is: a name, JSON schemas for its arguments and result, annotations, and a call that
// runs as the caller's principal. Tools lead agents to resources (issue 15); they never write.
import { z } from 'zod';
import type {
  InputParams,
  InputRequiredResult,
  RequestContext,
  StreamingResult,
} from '../protocol/index.js';

/** One content block of a tool result (spec §6.x ContentBlock); pgmcp builds them as plain JSON. */
export type ContentBlock = Record<string, unknown> & { type: string };

/** A complete tools/call result before the dispatcher adds resultType and _meta. */
export interface ToolResult {
  readonly content: readonly ContentBlock[];
  /** An object: 2025-11-25 requires one, and every pgmcp outputSchema is `type: object`. */
  readonly structuredContent?: Record<string, unknown>;
  readonly isError?: boolean;
}

/** What a retried call carries (spec §4.3 InputResponseRequestParams). */
export type ToolInput = InputParams;

export type { InputRequiredResult };

/** A tool the registry serves. `TArgs` is what `args` parses `arguments` into. */
export interface Tool<TArgs = unknown> {
  /** Spec Tool Names: 1–128 of [A-Za-z0-9_.-]. */
  readonly name: string;
  readonly title: string;
  readonly description: string;
  /** Parses and validates `arguments`; also the source of `inputSchema`, unless that is given. */
  readonly args: z.ZodType<TArgs>;
  /**
   * The JSON Schema listed as `inputSchema` when it says more than zod can (2020-12 keywords such
   * as `$defs`, `if`/`then`/`else`); `args` must accept what it describes.
   */
  readonly inputSchema?: Record<string, unknown>;
  /** The JSON Schema of `structuredContent`, when the tool returns one. */
  readonly outputSchema?: Record<string, unknown>;
  /**
   * Run the call as `ctx.principal`. A StreamingResult only when the call sends notifications on
   * its own response stream before the result (progress, spec §11); an InputRequiredResult when
   * it needs the client's help first (spec §4), `input` being what the retry carries.
   */
  call(
    args: TArgs,
    ctx: RequestContext,
    input: InputParams,
  ): Promise<ToolResult | InputRequiredResult | StreamingResult>;
}

/** Type-checks a tool against its argument schema at the definition site. */
export function defineTool<TArgs>(tool: Tool<TArgs>): Tool<TArgs> {
  return tool;
}

/** A result whose only content is `text`. */
export function textResult(
  text: string,
  structuredContent?: Record<string, unknown>,
): ToolResult {
  return {
    content: [{ type: 'text', text }],
    ...(structuredContent === undefined ? {} : { structuredContent }),
  };
}

/**
 * A tool execution error (CallToolResult.isError): the model sees it and can correct the call,
 * which a JSON-RPC error would hide from it.
 */
export function toolError(
  text: string,
  structuredContent?: Record<string, unknown>,
): ToolResult {
  return { ...textResult(text, structuredContent), isError: true };
}

/** The JSON Schema of a zod argument schema, as `inputSchema` (root `type: object`). */
export function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  return z.toJSONSchema(schema, { io: 'input' });
}
