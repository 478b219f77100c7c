// prompts/get (spec §8.2): one stored prompt the caller's role can read, its arguments checked
// against the stored declaration, its messages rendered as the caller. Not cacheable.
import { runRequestQuery } from '../db/index.js';
import { GET_PROMPT } from './statements/prompt-statements.js';
import { ProtocolError } from '../errors.js';
import {
  createMethod,
  GetPromptParamsSchema,
  type GetPromptParams,
  type MethodHandler,
  type RequestContext,
} from '../protocol/index.js';
import type {
  PromptDependencies,
  PromptLimits,
  StoredArgument,
} from './prompt-dependencies.js';
import {
  ConsentNeeded,
  renderMessages,
  type MessageTemplate,
} from './prompt-render.js';

/** A stored prompt as prompts/get and completion read it. */
export interface StoredPrompt {
  readonly name: string;
  readonly description: string | null;
  readonly arguments: readonly StoredArgument[];
  readonly messages: readonly MessageTemplate[];
}

/** The prompt `name` if the role can read it; otherwise -32602, as for one that does not exist. */
export async function findPrompt(
  deps: PromptDependencies,
  ctx: RequestContext,
  name: string,
): Promise<StoredPrompt> {
  const [row] = await runRequestQuery(
    { db: deps.db, principal: ctx.principal, cancellation: ctx },
    GET_PROMPT,
    {
      name,
    },
  );
  if (row === undefined)
    throw new ProtocolError(
      'INVALID_PARAMS',
      `Invalid params: unknown prompt ${JSON.stringify(name.slice(0, 128))}.`,
      { data: { name: name.slice(0, 128) } },
    );
  return {
    name: row.name,
    description: row.description,
    arguments: JSON.parse(row.arguments) as StoredArgument[],
    messages: JSON.parse(row.messages) as MessageTemplate[],
  };
}

/** Every declared argument's value ("" for an optional one not given); -32602 names what is wrong. */
function argumentValues(
  prompt: StoredPrompt,
  given: Readonly<Record<string, string>>,
): Map<string, string> {
  const declared = new Set(prompt.arguments.map((argument) => argument.name));
  const unknown = Object.keys(given).filter((name) => !declared.has(name));
  if (unknown.length > 0)
    throw new ProtocolError(
      'INVALID_PARAMS',
      `Invalid params: prompt ${prompt.name} has no argument ${JSON.stringify(unknown[0]?.slice(0, 100))}.`,
    );
  const values = new Map<string, string>();
  for (const argument of prompt.arguments) {
    const value = given[argument.name];
    if (value === undefined && argument.required === true)
      throw new ProtocolError(
        'INVALID_PARAMS',
        `Invalid params: prompt ${prompt.name} needs the argument ${argument.name}.`,
        { data: { missing: argument.name } },
      );
    values.set(argument.name, value ?? '');
  }
  return values;
}

/**
 * -32602 when the call carries more arguments, or a longer value, than the settings allow: checked
 * before the prompt is looked up, so no bound is paid for in queries (issue 32 point 10).
 */
function checkArgumentBounds(
  limits: PromptLimits,
  given: Readonly<Record<string, string>>,
): void {
  const names = Object.keys(given);
  if (names.length > limits.maxArguments)
    throw new ProtocolError(
      'INVALID_PARAMS',
      `Invalid params: a prompt takes at most ${limits.maxArguments} arguments; ${names.length} were given.`,
      { data: { maxArguments: limits.maxArguments } },
    );
  for (const name of names)
    if (Buffer.byteLength(given[name] ?? '') > limits.maxArgumentBytes)
      throw new ProtocolError(
        'INVALID_PARAMS',
        `Invalid params: the argument ${JSON.stringify(name.slice(0, 100))} is longer than ${limits.maxArgumentBytes} bytes.`,
        { data: { maxArgumentBytes: limits.maxArgumentBytes } },
      );
}

export function createGetPromptMethod(
  deps: PromptDependencies,
): MethodHandler<GetPromptParams> {
  return createMethod({
    params: GetPromptParamsSchema,
    async handle(params, ctx) {
      checkArgumentBounds(deps.limits, params.arguments ?? {});
      const prompt = await findPrompt(deps, ctx, params.name);
      const values = argumentValues(prompt, params.arguments ?? {});
      let messages;
      try {
        messages = await renderMessages(deps, ctx, {
          templates: prompt.messages,
          values,
        });
      } catch (error) {
        if (!(error instanceof ConsentNeeded)) throw error;
        // Bound to the prompt, its arguments and the resource: the state fits this request only.
        const target = `prompt: ${prompt.name} ${JSON.stringify(params.arguments ?? {})} embeds ${error.uri}`;
        const outcome = await deps.consent(ctx, target, params);
        if (!outcome.granted) return outcome.result;
        messages = await renderMessages(deps, ctx, {
          templates: prompt.messages,
          values,
          consented: true,
        });
      }
      return {
        ...(prompt.description === null
          ? {}
          : { description: prompt.description }),
        messages,
      };
    },
  });
}
