// Multi round-trip requests (spec §4): a tools/call, prompts/get or resources/read that needs the
// client's help answers `resultType: "input_required"` with input requests (elicitation, sampling,
// roots) and a signed requestState; the retry carries the answers. Every such flow in pgmcp (a
// person's consent, the conformance fixtures) is built from what this file offers.
import {
  createHash,
  createHmac,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto';
import { principalIdentity, type Principal } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import type { RequestMeta } from './wire.js';

const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';

/** One input request (spec §4.3): no jsonrpc, no id; the key in `inputRequests` names it. */
export interface InputRequest {
  readonly method:
    'elicitation/create' | 'sampling/createMessage' | 'roots/list';
  readonly params: Record<string, unknown>;
}

/** What a retry carries (spec §4.3 InputResponseRequestParams). */
export interface InputParams {
  readonly inputResponses?: Record<string, unknown> | undefined;
  readonly requestState?: string | undefined;
}

/** An InputRequiredResult (spec §4.3); the dispatcher adds `_meta`, and it carries no caching. */
export interface InputRequiredResult {
  readonly resultType: 'input_required';
  readonly inputRequests: Record<string, InputRequest>;
  readonly requestState?: string;
  readonly [key: string]: unknown;
}

/** A person's consent decision (resources/ consent.ts): granted, or the question to answer with. */
export type ConsentOutcome =
  | { readonly granted: true }
  | { readonly granted: false; readonly result: InputRequiredResult };

export function inputRequired(
  inputRequests: Record<string, InputRequest>,
  requestState?: string,
): InputRequiredResult {
  return {
    resultType: 'input_required',
    inputRequests,
    ...(requestState === undefined ? {} : { requestState }),
  };
}

/** A form elicitation: a message and a flat schema of primitive properties (spec §4.7). */
export function formElicitation(
  message: string,
  requestedSchema: Record<string, unknown>,
): InputRequest {
  return {
    method: 'elicitation/create',
    params: { mode: 'form', message, requestedSchema },
  };
}

/** The client capabilities an input request needs (spec §4.5; `elicitation: {}` is form only). */
const NEEDS: Record<InputRequest['method'], Record<string, object>> = {
  'elicitation/create': { elicitation: { form: {} } },
  'sampling/createMessage': { sampling: {} },
  'roots/list': { roots: {} },
};

/** Whether this request's clientCapabilities declare what `method` needs. */
export function clientCanAnswer(
  meta: RequestMeta,
  method: InputRequest['method'],
): boolean {
  const declared = meta[META_CLIENT_CAPABILITIES];
  const capability = declared[Object.keys(NEEDS[method])[0] ?? ''];
  if (typeof capability !== 'object' || capability === null) return false;
  if (method !== 'elicitation/create') return true;
  return Object.keys(capability).length === 0 || 'form' in capability;
}

/**
 * -32021 naming exactly the capabilities `requests` need that this request did not declare, so
 * nothing is asked of a client that cannot answer (spec §4.5); `why` says what needed them.
 */
export function requireClientCapabilities(
  meta: RequestMeta,
  requests: Record<string, InputRequest>,
  why: string,
): void {
  const missing: Record<string, object> = {};
  for (const { method } of Object.values(requests))
    if (!clientCanAnswer(meta, method)) Object.assign(missing, NEEDS[method]);
  if (Object.keys(missing).length > 0)
    throw new ProtocolError('MISSING_CLIENT_CAPABILITY', why, {
      data: { requiredCapabilities: missing },
    });
}

/** An ElicitResult, checked (spec §4.3): accept with content, decline or cancel. */
export interface ElicitAnswer {
  readonly action: 'accept' | 'decline' | 'cancel';
  readonly content: Readonly<Record<string, unknown>>;
}

/**
 * The answers to `requests` in `inputResponses`, each checked against its method's result shape;
 * `missing` holds the requests still unanswered (asked again, spec §4.5), and keys not asked for
 * are ignored. A malformed answer is -32602.
 */
export function collectAnswers(
  requests: Record<string, InputRequest>,
  inputResponses: Record<string, unknown> | undefined,
): {
  readonly answers: Record<string, unknown>;
  readonly missing: Record<string, InputRequest>;
} {
  const answers: Record<string, unknown> = {};
  const missing: Record<string, InputRequest> = {};
  for (const [key, request] of Object.entries(requests)) {
    const answer = inputResponses?.[key];
    if (answer === undefined) missing[key] = request;
    else answers[key] = checkAnswer(key, request.method, answer);
  }
  return { answers, missing };
}

function checkAnswer(
  key: string,
  method: InputRequest['method'],
  answer: unknown,
): unknown {
  const record = isRecord(answer) ? answer : undefined;
  const malformed = (shape: string): never => {
    throw new ProtocolError(
      'INVALID_INPUT_RESPONSE',
      `Invalid params: inputResponses.${key.slice(0, 100)} must be ${shape}.`,
    );
  };
  switch (method) {
    case 'elicitation/create': {
      const action = record?.['action'];
      const content = record?.['content'] ?? {};
      if (
        (action !== 'accept' && action !== 'decline' && action !== 'cancel') ||
        !isRecord(content)
      )
        return malformed('an ElicitResult ({action, content})');
      return { action, content } satisfies ElicitAnswer;
    }
    case 'sampling/createMessage':
      if (!isRecord(record?.['content']) || typeof record['role'] !== 'string')
        return malformed('a CreateMessageResult ({role, content, model})');
      return record;
    case 'roots/list':
      if (!Array.isArray(record?.['roots']))
        return malformed('a ListRootsResult ({roots})');
      return record;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * requestState codec (spec §4.5: attacker-controlled input, integrity-protected):
 * `<version>.<payload>.<HMAC>`, the payload binding the caller, the exact request (method and
 * target), an expiry and the flow's own data. Keys derive from the cursor secrets and `purpose`,
 * so every replica verifies and states of one flow are useless to another.
 */
export class RequestStateCodec {
  readonly #keys: Buffer[];

  constructor(
    secrets: readonly string[],
    readonly options: {
      /** Separates flows' keys and names the state's version prefix. */
      readonly purpose: string;
      readonly version: string;
      readonly expiryMs: number;
      readonly now: () => number;
    },
  ) {
    this.#keys = secrets.map((secret) =>
      createHmac('sha256', secret).update(options.purpose).digest(),
    );
  }

  sign(
    principal: Principal,
    request: { method: string; target: string },
    data?: Record<string, unknown>,
  ): string {
    const payload = Buffer.from(
      JSON.stringify({
        p: principalDigest(principal),
        r: requestDigest(request.method, request.target),
        e: this.options.now() + this.options.expiryMs,
        // Every state is unique, so one answered can be told from any other (used once).
        n: randomBytes(12).toString('base64url'),
        ...(data === undefined ? {} : { d: data }),
      }),
    ).toString('base64url');
    const signed = `${this.options.version}.${payload}`;
    const mac = createHmac('sha256', this.#keys[0] as Buffer)
      .update(signed)
      .digest('base64url');
    return `${signed}.${mac}`;
  }

  /** The state's data; -32602 unless `state` is ours, unexpired, for this caller and request. */
  verify(
    state: string,
    principal: Principal,
    request: { method: string; target: string },
  ): Record<string, unknown> {
    const [version, payload, mac, extra] = state.split('.');
    const given = Buffer.from(mac ?? '', 'base64url');
    const signed =
      version === this.options.version &&
      payload !== undefined &&
      extra === undefined &&
      this.#keys.some((key) => {
        const expected = createHmac('sha256', key)
          .update(`${version}.${payload}`)
          .digest();
        return (
          expected.length === given.length && timingSafeEqual(expected, given)
        );
      });
    if (!signed) invalidState('it was not issued by this server');
    const claims = JSON.parse(
      Buffer.from(payload ?? '', 'base64url').toString('utf8'),
    ) as { p?: unknown; r?: unknown; e?: unknown; d?: unknown };
    if (claims.p !== principalDigest(principal))
      invalidState('it was issued to another caller');
    if (claims.r !== requestDigest(request.method, request.target))
      invalidState('it was issued for another request');
    if (typeof claims.e !== 'number' || claims.e <= this.options.now())
      invalidState('it has expired; send the request again to be asked again');
    return isRecord(claims.d) ? claims.d : {};
  }
}

function invalidState(problem: string): never {
  throw new ProtocolError(
    'INVALID_INPUT_RESPONSE',
    `Invalid params: requestState is not valid: ${problem}.`,
  );
}

/** Who (auth's principalIdentity): one caller's state is useless to another. */
export function principalDigest(principal: Principal): string {
  return createHash('sha256')
    .update(principalIdentity(principal))
    .digest('base64url');
}

function requestDigest(method: string, target: string): string {
  return createHash('sha256')
    .update(JSON.stringify([method, target]))
    .digest('base64url');
}
