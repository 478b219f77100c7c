// The fixture tools of the official conformance suite's 2025-11-25 scenarios that ask the client
// something (tools-call-sampling, tools-call-elicitation, elicitation-sep1034-defaults,
// elicitation-sep1330-enums) or log while they run (tools-call-with-logging). Served beside
// conformance-fixtures.ts, only when the config file asks for them. They ask the 2026-07-28 way
// (an input_required result, then the retry with inputResponses); a legacy session gets the same
// questions as elicitation/create and sampling/createMessage requests from the era adapter.
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import type { InputRequest } from '../protocol/index.js';
import {
  defineTool,
  textResult,
  type InputRequiredResult,
  type Tool,
  type ToolInput,
  type ToolResult,
} from './tool.js';

/** The key of each fixture's single input request. */
const KEY = 'input';

const NO_ARGUMENTS = z.object({}).strict();

/** A fixture that asks one question: input_required first, then `answer` with the client's result. */
function asking<TArgs>(options: {
  name: string;
  description: string;
  args: z.ZodType<TArgs>;
  ask: (args: TArgs) => InputRequest;
  answer: (result: Record<string, unknown>) => string;
}): Tool<TArgs> {
  return defineTool({
    name: options.name,
    title: options.name,
    description: options.description,
    args: options.args,
    call(args, _ctx, input: ToolInput) {
      const result = input.inputResponses?.[KEY];
      if (typeof result === 'object' && result !== null)
        return Promise.resolve(
          textResult(options.answer(result as Record<string, unknown>)),
        );
      const question: InputRequiredResult = {
        resultType: 'input_required',
        inputRequests: { [KEY]: options.ask(args) },
      };
      return Promise.resolve(question);
    },
  });
}

/** An elicitation fixture's answer: the action and the content the client sent. */
function elicited(prefix: string) {
  return (result: Record<string, unknown>) =>
    `${prefix}: action=${String(result['action'])}, content=${JSON.stringify(result['content'] ?? {})}`;
}

function elicitation(
  message: string,
  properties: Record<string, unknown>,
): InputRequest {
  return {
    method: 'elicitation/create',
    params: {
      message,
      requestedSchema: { type: 'object', properties, required: [] },
    },
  };
}

/** The suite's 2025-11-25 fixture tools that ask the client or log. */
export function legacyConformanceFixtureTools(): Tool[] {
  return [
    loggingTool(),
    asking({
      name: 'test_sampling',
      description: 'Asks the client for an LLM completion of the prompt.',
      args: z.object({ prompt: z.string() }).strict(),
      ask: ({ prompt }) => ({
        method: 'sampling/createMessage',
        params: {
          messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
          maxTokens: 100,
        },
      }),
      answer: (result) => {
        const content = result['content'] as { text?: unknown } | null;
        const text = content?.text;
        return `LLM response: ${typeof text === 'string' ? text : ''}`;
      },
    }),
    asking({
      name: 'test_elicitation',
      description: 'Asks the person for a username and an email address.',
      args: z.object({ message: z.string() }).strict(),
      ask: ({ message }) => ({
        method: 'elicitation/create',
        params: {
          message,
          requestedSchema: {
            type: 'object',
            properties: {
              username: { type: 'string', description: "User's response" },
              email: { type: 'string', description: "User's email address" },
            },
            required: ['username', 'email'],
          },
        },
      }),
      answer: elicited('User response'),
    }),
    asking({
      name: 'test_elicitation_sep1034_defaults',
      description: 'Asks with a default value for every primitive type.',
      args: NO_ARGUMENTS,
      ask: () => elicitation('Please review the defaults', SEP1034_FIELDS),
      answer: elicited('Elicitation completed'),
    }),
    asking({
      name: 'test_elicitation_sep1330_enums',
      description: 'Asks with each of the five enum schema variants.',
      args: NO_ARGUMENTS,
      ask: () => elicitation('Please choose options', SEP1330_FIELDS),
      answer: elicited('Elicitation completed'),
    }),
  ];
}

/** Three info messages about its own work, 50 ms apart (tools-call-with-logging). */
function loggingTool(): Tool {
  return defineTool({
    name: 'test_tool_with_logging',
    title: 'test_tool_with_logging',
    description: 'Sends three info log messages about its own work.',
    args: NO_ARGUMENTS,
    async call(_args, ctx): Promise<ToolResult> {
      const messages = [
        'Tool execution started',
        'Tool processing data',
        'Tool execution completed',
      ];
      for (const [index, message] of messages.entries()) {
        if (index > 0) await delay(50, undefined, { signal: ctx.signal });
        ctx.notices.log('info', 'conformance', { message });
      }
      return textResult('Logging tool completed.');
    },
  });
}

const SEP1034_FIELDS = {
  name: { type: 'string', description: 'User name', default: 'John Doe' },
  age: { type: 'integer', description: 'User age', default: 30 },
  score: { type: 'number', description: 'User score', default: 95.5 },
  status: {
    type: 'string',
    description: 'User status',
    enum: ['active', 'inactive', 'pending'],
    default: 'active',
  },
  verified: {
    type: 'boolean',
    description: 'Verification status',
    default: true,
  },
};

const titled = (prefix: string, titles: readonly string[]) =>
  titles.map((title, index) => ({ const: `${prefix}${index + 1}`, title }));

const SEP1330_FIELDS = {
  untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
  titledSingle: {
    type: 'string',
    oneOf: titled('value', ['First Option', 'Second Option', 'Third Option']),
  },
  legacyEnum: {
    type: 'string',
    enum: ['opt1', 'opt2', 'opt3'],
    enumNames: ['Option One', 'Option Two', 'Option Three'],
  },
  untitledMulti: {
    type: 'array',
    items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
  },
  titledMulti: {
    type: 'array',
    items: {
      anyOf: titled('value', ['First Choice', 'Second Choice', 'Third Choice']),
    },
  },
};
