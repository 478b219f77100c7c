// The conformance suite's fixtures for multi round-trip requests (input-required-result-*) and for
// what server-stateless probes through tools (client capabilities, the request's own stream, log
// levels). Served only with the conformance seed's config, like the other fixtures. Built on the
// same input-required machinery as a person's consent (protocol/ input-required.ts): capability
// checks, answers checked per method, requestState signed and bound to the caller and the call.
import { changeConformancePrompts, type DatabaseHandle } from '../db/index.js';
import {
  clientCanAnswer,
  collectAnswers,
  formElicitation,
  inputRequired,
  RequestStateCodec,
  requireClientCapabilities,
  type ElicitAnswer,
  type InputParams,
  type InputRequest,
  type InputRequiredResult,
  type RequestContext,
} from '../protocol/index.js';
import { fixture, NO_ARGUMENTS } from './conformance-fixtures.js';
import { defineTool, textResult, type Tool, type ToolResult } from './tool.js';

/** The suite's prompt that asks for input (input-required-result-non-tool-request). */
export const INPUT_FIXTURE_PROMPT = 'test_input_required_result_prompt';

type Requests = Record<string, InputRequest>;
type Answers = Record<string, unknown>;

/** A flat form schema whose properties are all required. */
function form(message: string, properties: Record<string, string>) {
  return formElicitation(message, {
    type: 'object',
    properties: Object.fromEntries(
      Object.entries(properties).map(([name, type]) => [name, { type }]),
    ),
    required: Object.keys(properties),
  });
}

function sampling(text: string, maxTokens: number): InputRequest {
  return {
    method: 'sampling/createMessage',
    params: {
      messages: [{ role: 'user', content: { type: 'text', text } }],
      maxTokens,
    },
  };
}

const ROOTS: InputRequest = { method: 'roots/list', params: {} };
const NAME = form('What is your name?', { name: 'string' });
const CONFIRM = form('Please confirm', { ok: 'boolean' });

/**
 * One round: the requests still unanswered are asked (again, spec §4.5), after checking the
 * client can answer them (-32021 otherwise); once all are answered, `finish` makes the result.
 */
function ask<TResult>(
  ctx: RequestContext,
  input: InputParams,
  requests: Requests,
  finish: (answers: Answers) => TResult,
): TResult | InputRequiredResult {
  const { answers, missing } = collectAnswers(requests, input.inputResponses);
  if (Object.keys(missing).length === 0) return finish(answers);
  requireClientCapabilities(
    ctx.meta,
    missing,
    'This call asks the client for input it did not declare it can give.',
  );
  return inputRequired(missing, input.requestState);
}

function contentOf(answer: unknown, field: string): string {
  const elicited = answer as ElicitAnswer;
  const value =
    elicited.action === 'accept' ? elicited.content[field] : undefined;
  if (value === undefined) return `(${elicited.action})`;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function inputFixture(
  name: string,
  description: string,
  call: (
    ctx: RequestContext,
    input: InputParams,
  ) => ToolResult | InputRequiredResult,
): Tool {
  return fixture(name, description, (_args, ctx, input) =>
    Promise.resolve(call(ctx, input)),
  );
}

/**
 * The suite's input-required and capability fixtures, state signed with `secrets`, and the one
 * that changes the stored prompts in `db`.
 */
export function conformanceInputTools(
  secrets: readonly string[],
  db: DatabaseHandle,
): Tool[] {
  const states = new RequestStateCodec(secrets, {
    purpose: 'pgmcp conformance fixture state',
    version: 'f1',
    expiryMs: 600_000,
    now: Date.now,
  });
  const changePrompts = defineTool({
    name: 'test_trigger_prompt_change',
    title: 'test_trigger_prompt_change',
    description:
      'Adds or removes a stored prompt with SQL (the conformance seed’s hook), so listen streams hear prompts/list_changed.',
    args: NO_ARGUMENTS,
    call: async () => {
      await changeConformancePrompts(db);
      return textResult('The prompt list changed.');
    },
  });
  return [
    ...basicInputTools(),
    ...statefulInputTools(states),
    ...probeTools(),
    changePrompts,
  ];
}

/** One request each, no state (tampering could only make the call fail, spec §4.5). */
function basicInputTools(): Tool[] {
  return [
    inputFixture(
      'test_input_required_result_elicitation',
      'Asks the person their name (form elicitation), then greets them.',
      (ctx, input) =>
        ask(ctx, input, { user_name: NAME }, (answers) =>
          textResult(`Hello, ${contentOf(answers['user_name'], 'name')}!`),
        ),
    ),
    inputFixture(
      'test_input_required_result_sampling',
      'Asks the client’s model a question (sampling), then returns its answer.',
      (ctx, input) =>
        ask(
          ctx,
          input,
          { capital_question: sampling('What is the capital of France?', 100) },
          (answers) =>
            textResult(
              `The model answered: ${sampled(answers, 'capital_question')}`,
            ),
        ),
    ),
    inputFixture(
      'test_input_required_result_list_roots',
      'Asks the client for its roots, then lists them.',
      (ctx, input) =>
        ask(ctx, input, { client_roots: ROOTS }, (answers) =>
          textResult(`Roots: ${rootsOf(answers['client_roots'])}`),
        ),
    ),
  ];
}

/** What server-stateless probes: capabilities, the request's own stream, log levels. */
function probeTools(): Tool[] {
  return [
    inputFixture(
      'test_input_required_result_capabilities',
      'Asks the person (elicitation) or the client’s model (sampling), whichever the request declares.',
      (ctx, input) => askDeclared(ctx, input),
    ),
    inputFixture(
      'test_missing_capability',
      'Needs sampling: without it in the request’s clientCapabilities the call is -32021.',
      (ctx, input) =>
        ask(ctx, input, { answer: sampling('Say hello.', 20) }, (answers) =>
          textResult(`The model said: ${sampled(answers, 'answer')}`),
        ),
    ),
    inputFixture(
      'test_streaming_elicitation',
      'Needs elicitation: the question is an input_required result, never a request on the stream.',
      (ctx, input) =>
        ask(ctx, input, { user_name: NAME }, (answers) =>
          textResult(`Hello, ${contentOf(answers['user_name'], 'name')}!`),
        ),
    ),
    inputFixture(
      'test_logging_tool',
      'Logs at info and warning: notifications/message only at or above the request’s logLevel.',
      (ctx) => {
        ctx.notices.log('info', 'conformance', { message: 'Tool started' });
        ctx.notices.log('warning', 'conformance', { message: 'Tool warned' });
        return textResult('Logging tool completed.');
      },
    ),
  ];
}

/** Verifies and signs a fixture's requestState, bound to the caller and the tool it names. */
interface FixtureStates {
  /** The state's data when one was sent (verified), else undefined: a first call. */
  of(
    ctx: RequestContext,
    input: InputParams,
    name: string,
  ): Answers | undefined;
  sign(ctx: RequestContext, name: string, data: Answers): string;
}

/** The fixtures whose requestState carries the flow (signed, bound to the caller and the tool). */
function statefulInputTools(codec: RequestStateCodec): Tool[] {
  const request = (name: string) => ({ method: 'tools/call', target: name });
  const states: FixtureStates = {
    of: (ctx, input, name) =>
      input.requestState === undefined
        ? undefined
        : codec.verify(input.requestState, ctx.principal, request(name)),
    sign: (ctx, name, data) => codec.sign(ctx.principal, request(name), data),
  };
  const confirmed = (name: string, text: string) =>
    inputFixture(
      name,
      'Asks for a confirmation with a signed requestState.',
      (ctx, input) => {
        if (states.of(ctx, input, name) === undefined)
          return askWithState(
            ctx,
            { confirm: CONFIRM },
            states.sign(ctx, name, {}),
          );
        return ask(ctx, input, { confirm: CONFIRM }, () => textResult(text));
      },
    );
  return [
    confirmed(
      'test_input_required_result_request_state',
      'Confirmed; state-ok: the requestState was verified.',
    ),
    confirmed(
      'test_input_required_result_tampered_state',
      'Confirmed with an untampered requestState.',
    ),
    multipleInputs(states),
    multiRound(states),
  ];
}

function multipleInputs(states: FixtureStates): Tool {
  const name = 'test_input_required_result_multiple_inputs';
  const requests: Requests = {
    user_name: NAME,
    greeting: sampling('Generate a greeting', 50),
    client_roots: ROOTS,
  };
  return inputFixture(
    name,
    'Asks the person, the client’s model and the client’s roots at once, with a requestState.',
    (ctx, input) => {
      if (states.of(ctx, input, name) === undefined)
        return askWithState(ctx, requests, states.sign(ctx, name, {}));
      return ask(ctx, input, requests, (answers) =>
        textResult(
          `${sampled(answers, 'greeting')} ${contentOf(answers['user_name'], 'name')}; roots: ${rootsOf(answers['client_roots'])}`,
        ),
      );
    },
  );
}

function multiRound(states: FixtureStates): Tool {
  const name = 'test_input_required_result_multi_round';
  const step1 = {
    step1: form('Step 1: What is your name?', { name: 'string' }),
  };
  const step2 = {
    step2: form('Step 2: What is your favorite color?', { color: 'string' }),
  };
  return inputFixture(
    name,
    'Asks a name, then a colour, carrying the first answer in the signed requestState.',
    (ctx, input) => {
      const state = states.of(ctx, input, name);
      if (state === undefined)
        return askWithState(ctx, step1, states.sign(ctx, name, { round: 1 }));
      if (state['round'] === 1)
        return ask(ctx, input, step1, (answers) =>
          askWithState(
            ctx,
            step2,
            states.sign(ctx, name, {
              round: 2,
              name: contentOf(answers['step1'], 'name'),
            }),
          ),
        );
      return ask(ctx, input, step2, (answers) =>
        textResult(
          `${String(state['name'])} likes ${contentOf(answers['step2'], 'color')}.`,
        ),
      );
    },
  );
}

/** The first round of a stateful flow: the requests the client can answer, with the state. */
function askWithState(
  ctx: RequestContext,
  requests: Requests,
  state: string,
): InputRequiredResult {
  return ask(ctx, { requestState: state }, requests, () => {
    throw new Error('a first round has no answers');
  });
}

/** Only what the request declared (spec §4.5): elicitation when it can, sampling when it can. */
function askDeclared(
  ctx: RequestContext,
  input: InputParams,
): ToolResult | InputRequiredResult {
  const elicit = { user_name: NAME };
  const sample = { greeting: sampling('Generate a greeting', 50) };
  const requests: Requests = {
    ...(clientCanAnswer(ctx.meta, 'elicitation/create') ? elicit : {}),
    ...(clientCanAnswer(ctx.meta, 'sampling/createMessage') ? sample : {}),
  };
  return ask(
    ctx,
    input,
    Object.keys(requests).length > 0 ? requests : { ...elicit, ...sample },
    (answers) => textResult(`Answered: ${Object.keys(answers).join(', ')}`),
  );
}

function sampled(answers: Answers, key: string): string {
  const content = (answers[key] as { content: Record<string, unknown> })
    .content;
  return typeof content['text'] === 'string' ? content['text'] : '(no text)';
}

function rootsOf(answer: unknown): string {
  const roots = (answer as { roots: unknown[] }).roots;
  return roots
    .map((root) =>
      typeof root === 'object' && root !== null && 'uri' in root
        ? String(root.uri)
        : '?',
    )
    .join(', ');
}

/** prompts/get of INPUT_FIXTURE_PROMPT: asks what context to use, then renders with it. */
export function inputFixturePrompt(
  ctx: RequestContext,
  input: InputParams,
): Record<string, unknown> {
  return ask(
    ctx,
    input,
    {
      user_context: form('What context should the prompt use?', {
        context: 'string',
      }),
    },
    (answers) => ({
      description: 'A prompt that asks for its context first.',
      messages: [
        {
          role: 'user',
          content: {
            type: 'text',
            text: `Use this context: ${contentOf(answers['user_context'], 'context')}`,
          },
        },
      ],
    }),
  );
}
