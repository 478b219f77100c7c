// A person's consent before sensitive data is read (issue 17, spec §4): the first read answers
// input_required with a form asking for a reason and a signed requestState; the retry that carries
// the answer and that state reads the data. Every step is written to pgmcp.audit. Consents given
// are remembered, per caller and URI until they expire, for listen streams (hasConsent).
import type { Principal } from '../auth/index.js';
import { createHash } from 'node:crypto';
import { writeAudit, type DatabaseHandle } from '../db/index.js';
import { useConsentState } from './statements/consent-states.js';
import { ProtocolError } from '../errors.js';
import {
  collectAnswers,
  formElicitation,
  inputRequired,
  principalDigest,
  RequestStateCodec,
  requireClientCapabilities,
  type ConsentOutcome,
  type ElicitAnswer,
  type InputParams,
  type InputRequest,
  type RequestContext,
} from '../protocol/index.js';

/** The input request's key in `inputRequests` and `inputResponses`. */
export const CONSENT_KEY = 'consent';
/** Longest reason kept (the audit's reason column is free text; this keeps it readable). */
const MAX_REASON = 500;
/** Most consents remembered for listen streams; the oldest are forgotten first. */
const MAX_REMEMBERED = 10_000;

export interface ConsentOptions {
  readonly db: DatabaseHandle;
  /** The first signs requestState, all verify (the cursor secrets: rotation, replicas). */
  readonly secrets: readonly string[];
  /** How long a requestState, and a consent given with it, stays good, in minutes. */
  readonly expiryMinutes: number;
  /** The clock (tests); Date.now by default. */
  readonly now?: () => number;
}

/** What a consent-gated request carries on its retry (spec §4.3 InputResponseRequestParams). */
export type ConsentParams = InputParams;

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
    read: { readonly method: string; readonly target: string },
    params: ConsentParams,
  ): Promise<ConsentOutcome>;
  /**
   * Whether `principal` consented to reading `uri` within the expiry, through this process (a
   * listen stream hears of a sensitive resource's updates only then).
   */
  hasConsent(principal: Principal, uri: string): boolean;
}

export function createConsentGate(options: ConsentOptions): ConsentGate {
  const now = options.now ?? Date.now;
  const expiryMs = options.expiryMinutes * 60_000;
  const states = new RequestStateCodec(options.secrets, {
    purpose: 'pgmcp consent state',
    version: 'c1',
    expiryMs,
    now,
  });
  const given = new ConsentLedger(now);
  const audit = (
    principal: Principal,
    {
      action,
      target,
      reason,
    }: { action: string; target: string; reason?: string },
  ) =>
    writeAudit(options.db, {
      role: principal.role,
      subject: subjectOf(principal),
      action,
      target,
      reason: reason ?? null,
    });
  return {
    async check(ctx, { method, target }, params) {
      const { principal } = ctx;
      const request = { method, target };
      const question = { [CONSENT_KEY]: ask(target) };
      if (params.requestState === undefined) {
        requireForm(ctx, question);
        await audit(principal, { action: 'consent-asked', target });
        const state = states.sign(principal, request);
        return { granted: false, result: inputRequired(question, state) };
      }
      states.verify(params.requestState, principal, request);
      const { answers } = collectAnswers(question, params.inputResponses);
      const answer = answers[CONSENT_KEY] as ElicitAnswer | undefined;
      // Spec §4.5: a retry missing the answer gets the question again, not an error.
      if (answer === undefined) {
        requireForm(ctx, question);
        return {
          granted: false,
          result: inputRequired(question, params.requestState),
        };
      }
      const reason = answer.action === 'accept' ? reasonOf(answer) : undefined;
      await answerOnce(options.db, params.requestState, now() + expiryMs);
      if (reason === undefined) {
        await audit(principal, { action: 'consent-declined', target });
        throw declined(target);
      }
      await audit(principal, { action: 'consent-given', target, reason });
      given.remember(principal, target, now() + expiryMs);
      return { granted: true };
    },
    hasConsent: (principal, uri) => given.holds(principal, uri),
  };
}

/**
 * Consents given through this process, per caller and URI, until they expire. In memory: a
 * listen stream on another replica does not see a consent given here (docs/consent.md).
 */
class ConsentLedger {
  readonly #until = new Map<string, number>();

  constructor(readonly now: () => number) {}

  remember(principal: Principal, uri: string, until: number): void {
    const key = `${principalDigest(principal)} ${uri}`;
    this.#until.delete(key);
    this.#until.set(key, until);
    // Insertion order is expiry order (one expiry for all): drop the expired, then the oldest.
    for (const [oldest, expiry] of this.#until) {
      if (expiry > this.now() && this.#until.size <= MAX_REMEMBERED) break;
      this.#until.delete(oldest);
    }
  }

  holds(principal: Principal, uri: string): boolean {
    const until = this.#until.get(`${principalDigest(principal)} ${uri}`);
    return until !== undefined && until > this.now();
  }
}

/** CONSENT_DECLINED for `target`. */
function declined(target: string): ProtocolError {
  return new ProtocolError(
    'CONSENT_DECLINED',
    'Consent declined: the sensitive resource was not read.',
    { data: { uri: target } },
  );
}

/**
 * A requestState's answer is used once, on any replica (issue 32 point 9): the state's digest is
 * recorded in the database until `until` (past the state's own expiry), and a replay is -32602.
 * Called after the answer is checked, so a malformed reason does not use the state up.
 */
async function answerOnce(
  db: DatabaseHandle,
  requestState: string,
  until: number,
): Promise<void> {
  const digest = createHash('sha256').update(requestState).digest();
  if (!(await useConsentState(db, digest, new Date(until))))
    throw new ProtocolError(
      'INVALID_INPUT_RESPONSE',
      'Invalid params: requestState is not valid: it was answered already; send the request again to be asked again.',
    );
}

/** The form: one required free-text reason (kept in the audit trail). */
function ask(target: string): InputRequest {
  return formElicitation(
    `${target} holds sensitive data. Reading it is recorded, with your reason, in the audit trail. Why is it needed?`,
    {
      type: 'object',
      properties: {
        reason: {
          type: 'string',
          title: 'Reason',
          description: 'Why this data is needed (kept in the audit trail)',
          minLength: 1,
          maxLength: MAX_REASON,
        },
      },
      required: ['reason'],
    },
  );
}

/** Form elicitation declared in this request's capabilities (`{}` alone means form), else -32021. */
function requireForm(
  ctx: RequestContext,
  question: Record<string, InputRequest>,
): void {
  requireClientCapabilities(
    ctx.meta,
    question,
    'This resource is sensitive: reading it needs a person’s consent, asked through form elicitation, which this request did not declare.',
  );
}

/** An accepted answer's reason, 1 to MAX_REASON characters; anything else is -32602. */
function reasonOf(answer: ElicitAnswer): string {
  const reason = answer.content['reason'];
  if (
    typeof reason !== 'string' ||
    reason.trim() === '' ||
    reason.length > MAX_REASON
  )
    throw new ProtocolError(
      'INVALID_INPUT_RESPONSE',
      `Invalid params: inputResponses.${CONSENT_KEY} must be {action: "accept", content: {reason}} with a reason of 1 to ${MAX_REASON} characters, or {action: "decline"}.`,
    );
  return reason.trim();
}

function subjectOf(principal: Principal): string | null {
  const sub = principal.claims['sub'];
  return typeof sub === 'string' ? sub : null;
}
