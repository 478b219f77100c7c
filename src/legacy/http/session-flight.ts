// One request of a 2025-11-25 HTTP session being answered, and whether its session check rides
// in the request's own transaction (legacy digest §5.4, §8.4).
import type http from 'node:http';
import { principalIdentity, type Principal } from '../../auth/index.js';
import type {
  InboundMessage,
  LeadingStatement,
  TransportContext,
} from '../../protocol/index.js';
import { AnsweredRequest } from '../../transport/index.js';
import { LEGACY_METHODS } from '../era/legacy-methods.js';
import type { LegacySession } from '../session/legacy-session.js';
import type { SessionCheck } from './session-records.js';

/**
 * One request of a session being answered (http-request-context.ts's AnsweredRequest: its sender,
 * its cancel, its notices), with the session's check. Notices (progress, log messages, a request
 * to the client) make the POST answer an SSE stream that ends with the response (legacy digest
 * §5.4). A request checked in its transaction sends none before that check has found its session
 * live: a question for the person (consent) waits for it, and a session found gone ends the
 * request.
 */
export class Flight extends AnsweredRequest implements TransportContext {
  readonly leadingStatement: LeadingStatement | undefined;
  readonly #response: http.ServerResponse;
  readonly #check: SessionCheck | undefined;

  constructor(
    principal: Principal,
    response: http.ServerResponse,
    check: SessionCheck | undefined,
  ) {
    super(principal);
    this.#response = response;
    this.#check = check;
    this.leadingStatement = check?.statement;
  }

  readonly notify = (notice: string): void => {
    if (this.#check === undefined) this.writeNotice(this.#response, notice);
    else
      void this.#check.result().then(
        (live) =>
          live ? this.writeNotice(this.#response, notice) : this.cancel(),
        () => this.cancel(),
      );
  };
}

/**
 * Whether a request's session check rides in its own request transaction (one round trip instead
 * of two): a method the era's table marks checkedInRequest (legacy-methods.ts), in a session held
 * here, when nothing can be sent before the answer (no log level set, no progressToken).
 */
export function checksInRequest(
  message: InboundMessage,
  session: LegacySession,
): boolean {
  if (
    message.id === undefined ||
    LEGACY_METHODS.get(message.method)?.checkedInRequest !== true
  )
    return false;
  if (session.logLevel !== undefined) return false;
  const meta = message.params?.['_meta'];
  return !(
    typeof meta === 'object' &&
    meta !== null &&
    'progressToken' in (meta as Record<string, unknown>)
  );
}

/** The same caller (auth's principalIdentity). */
export function samePrincipal(a: Principal, b: Principal): boolean {
  return a === b || principalIdentity(a) === principalIdentity(b);
}

export function keyOf(id: string | number): string {
  return `${typeof id}:${String(id)}`;
}
