// A person's consent before sensitive data is read (issue 17, spec §4): the first read answers
// input_required with a form asking for a reason and a signed requestState; the retry that carries
// the answer and that state reads the data. Every step is written to pgmcp.audit.
import { createHmac, createHash, timingSafeEqual } from 'node:crypto';
import type { Principal } from '../auth/index.js';
import { writeAudit, type DatabaseHandle } from '../db/index.js';
import { ProtocolError } from '../errors.js';
import type { RequestContext } from '../protocol/index.js';

/** The input request's key in `inputRequests` and `inputResponses`. */
export const CONSENT_KEY = 'consent';
/** Longest reason kept (the audit's reason column is free text; this keeps it readable). */
const MAX_REASON = 500;
const STATE_VERSION = 'c1';

export interface ConsentOptions {
  readonly db: DatabaseHandle;
  /** The first signs requestState, all verify (the cursor secrets: rotation, replicas). */
  readonly secrets: readonly string[];
  /** How long a requestState stays good, in minutes. */
  readonly expiryMinutes: number;
  /** The clock (tests); Date.now by default. */
  readonly now?: () => number;
}

/** What a consent-gated request carries on its retry (spec §4.3 InputResponseRequestParams). */
export interface ConsentParams {
  readonly inputResponses?: Record<string, unknown> | undefined;
  readonly requestState?: string | undefined;
}

export type ConsentOutcome =
  | { readonly granted: true }
  | { readonly granted: false; readonly result: Record<string, unknown> };

/** The one gate every sensitive read passes: resources/read today, tools later. */
export interface ConsentGate {
  /**
   * Decide for one read of `target` by `method`: granted (the answer accepted with a reason,
   * audited), or the input_required result to answer with. Throws -32021 when the client cannot
   * be asked, -32602 for a bad, expired or foreign requestState or a malformed answer, and
   * CONSENT_DECLINED (audited) when the person declined.
   */
  check(
    ctx: RequestContext,
    method: string,
    target: string,
    params: ConsentParams,
  ): Promise<ConsentOutcome>;
}

export function createConsentGate(options: ConsentOptions): ConsentGate {
  const states = new ConsentStates(
    options.secrets,
    options.expiryMinutes,
    options.now ?? Date.now,
  );
  const audit = (
    principal: Principal,
    action: string,
    target: string,
    reason?: string,
  ) =>
    writeAudit(options.db, {
      role: principal.role,
      subject: subjectOf(principal),
      action,
      target,
      reason: reason ?? null,
    });
  return {
    async check(ctx, method, target, params) {
      const { principal } = ctx;
      if (params.requestState === undefined) {
        requireForm(ctx);
        await audit(principal, 'consent-asked', target);
        const state = states.sign(principal, method, target);
        return { granted: false, result: ask(target, state) };
      }
      states.verify(params.requestState, principal, method, target);
      const answer = params.inputResponses?.[CONSENT_KEY];
      // Spec §4.5: a retry missing the answer gets the question again, not an error.
      if (answer === undefined) {
        requireForm(ctx);
        return { granted: false, result: ask(target, params.requestState) };
      }
      const { action, reason } = readAnswer(answer);
      if (action !== 'accept') {
        await audit(principal, 'consent-declined', target);
        throw new ProtocolError(
          'CONSENT_DECLINED',
          'Consent declined: the sensitive resource was not read.',
          { data: { uri: target } },
        );
      }
      await audit(principal, 'consent-given', target, reason);
      return { granted: true };
    },
  };
}

/**
 * requestState: `c1.<payload>.<HMAC>`, the payload binding the caller, the exact request (method
 * and target) and an expiry (spec §4.5: attacker-controlled input, integrity-protected).
 */
class ConsentStates {
  readonly #keys: Buffer[];

  constructor(
    secrets: readonly string[],
    readonly expiryMinutes: number,
    readonly now: () => number,
  ) {
    this.#keys = secrets.map((secret) =>
      createHmac('sha256', secret).update('pgmcp consent state').digest(),
    );
  }

  sign(principal: Principal, method: string, target: string): string {
    const payload = Buffer.from(
      JSON.stringify({
        p: principalDigest(principal),
        r: requestDigest(method, target),
        e: this.now() + this.expiryMinutes * 60_000,
      }),
    ).toString('base64url');
    const mac = createHmac('sha256', this.#keys[0] as Buffer)
      .update(`${STATE_VERSION}.${payload}`)
      .digest('base64url');
    return `${STATE_VERSION}.${payload}.${mac}`;
  }

  /** Throws -32602 unless `state` is ours, unexpired, and for this caller and this request. */
  verify(
    state: string,
    principal: Principal,
    method: string,
    target: string,
  ): void {
    const [version, payload, mac, extra] = state.split('.');
    const given = Buffer.from(mac ?? '', 'base64url');
    const signed =
      version === STATE_VERSION &&
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
    ) as { p?: unknown; r?: unknown; e?: unknown };
    if (claims.p !== principalDigest(principal))
      invalidState('it was issued to another caller');
    if (claims.r !== requestDigest(method, target))
      invalidState('it was issued for another request');
    if (typeof claims.e !== 'number' || claims.e <= this.now())
      invalidState('it has expired; read again to be asked again');
  }
}

/** The input_required result: a form asking for a reason, and the signed state (spec §4.3). */
function ask(target: string, state: string): Record<string, unknown> {
  return {
    resultType: 'input_required',
    inputRequests: {
      [CONSENT_KEY]: {
        method: 'elicitation/create',
        params: {
          mode: 'form',
          message: `${target} holds sensitive data. Reading it is recorded, with your reason, in the audit trail. Why is it needed?`,
          requestedSchema: {
            type: 'object',
            properties: {
              reason: {
                type: 'string',
                title: 'Reason',
                description:
                  'Why this data is needed (kept in the audit trail)',
                minLength: 1,
                maxLength: MAX_REASON,
              },
            },
            required: ['reason'],
          },
        },
      },
    },
    requestState: state,
  };
}

/** Form elicitation declared in this request's capabilities (`{}` alone means form), else -32021. */
function requireForm(ctx: RequestContext): void {
  const elicitation =
    ctx.meta['io.modelcontextprotocol/clientCapabilities']['elicitation'];
  const form =
    typeof elicitation === 'object' &&
    elicitation !== null &&
    (Object.keys(elicitation).length === 0 || 'form' in elicitation);
  if (!form)
    throw new ProtocolError(
      'MISSING_CLIENT_CAPABILITY',
      'This resource is sensitive: reading it needs a person’s consent, asked through form elicitation, which this request did not declare.',
      { data: { requiredCapabilities: { elicitation: { form: {} } } } },
    );
}

/** An ElicitResult: accept with a reason, or decline/cancel; anything else is -32602. */
function readAnswer(answer: unknown): { action: string; reason?: string } {
  const record =
    typeof answer === 'object' && answer !== null
      ? (answer as Record<string, unknown>)
      : {};
  const action = record['action'];
  if (action === 'decline' || action === 'cancel') return { action };
  const content = record['content'];
  const reason =
    typeof content === 'object' && content !== null
      ? (content as Record<string, unknown>)['reason']
      : undefined;
  if (
    action !== 'accept' ||
    typeof reason !== 'string' ||
    reason.trim() === '' ||
    reason.length > MAX_REASON
  )
    throw new ProtocolError(
      'INVALID_PARAMS',
      `Invalid params: inputResponses.${CONSENT_KEY} must be {action: "accept", content: {reason}} with a reason of 1 to ${MAX_REASON} characters, or {action: "decline"}.`,
    );
  return { action, reason: reason.trim() };
}

function invalidState(problem: string): never {
  throw new ProtocolError(
    'INVALID_PARAMS',
    `Invalid params: requestState is not valid: ${problem}.`,
  );
}

function subjectOf(principal: Principal): string | null {
  const sub = principal.claims['sub'];
  return typeof sub === 'string' ? sub : null;
}

/** Who: the role and the token's issuer and subject (one person's state is useless to another). */
function principalDigest(principal: Principal): string {
  return createHash('sha256')
    .update(
      JSON.stringify([
        principal.role,
        principal.claims['iss'] ?? null,
        principal.claims['sub'] ?? null,
      ]),
    )
    .digest('base64url');
}

function requestDigest(method: string, target: string): string {
  return createHash('sha256')
    .update(JSON.stringify([method, target]))
    .digest('base64url');
}
