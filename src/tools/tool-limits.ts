// Issue 32 point 4: one caller cannot take the server. query and explain calls in flight are
// counted per token and per role, and together they hold at most a share of the request pool, so
// the rest of it is always left for resources, prompts, search and fetch.
import { createHash } from 'node:crypto';
import type { Principal } from '../auth/index.js';
import { toolError, type Tool, type ToolResult } from './tool.js';

/** The key a refused call's text starts with (docs/tools.md "Limits"). */
export const TOOL_LIMIT = 'TOOL_LIMIT';
/** What the refusal suggests as the wait before a retry, as HTTP 503 answers' Retry-After does. */
const RETRY_AFTER_SECONDS = 1;

/** A role's own limits (config file "limits.roles"); absent fields take the defaults. */
export interface RoleToolLimits {
  readonly toolCallsPerToken?: number | undefined;
  readonly toolCallsPerRole?: number | undefined;
}

/** The limits (PGMCP_TOOL_CALLS_PER_TOKEN, _PER_ROLE, PGMCP_TOOL_CONNECTIONS, PGMCP_TOOL_WAIT_MS). */
export interface ToolLimits {
  /** Calls in flight per token (its `sub`, else a digest of its claims), by default. */
  readonly perToken: number;
  /** Calls in flight per role, every token of it together, by default. */
  readonly perRole: number;
  /** Per-role overrides, by role name. */
  readonly roles?: Readonly<Record<string, RoleToolLimits>>;
  /** Request pool connections the limited tools may hold together: calls running at once. */
  readonly connections: number;
  /** Longest a call waits for one of those before it is refused; 0: refused at once. */
  readonly waitMs: number;
}

interface Waiter {
  readonly admit: () => void;
}

/**
 * The counts behind the limits, shared by every limited tool. A call counts against its token and
 * role from the moment it is accepted (waiting included) until it returns.
 */
export class ToolCallLimiter {
  readonly #limits: ToolLimits;
  readonly #byToken = new Map<string, number>();
  readonly #byRole = new Map<string, number>();
  #running = 0;
  readonly #queue: Waiter[] = [];

  constructor(limits: ToolLimits) {
    this.#limits = limits;
  }

  /** Run `work` within the limits, or return the refusal without running it. */
  async run<TResult>(
    principal: Principal,
    signal: AbortSignal,
    work: () => Promise<TResult>,
  ): Promise<TResult | ToolResult> {
    const role = principal.role ?? '';
    const token = tokenKey(principal);
    const own = this.#limits.roles?.[role];
    const perToken = own?.toolCallsPerToken ?? this.#limits.perToken;
    const perRole = own?.toolCallsPerRole ?? this.#limits.perRole;
    if ((this.#byToken.get(token) ?? 0) >= perToken)
      return refusal(
        `this token already has ${perToken} query/explain ${perToken === 1 ? 'call' : 'calls'} in flight (the limit per token)`,
      );
    if ((this.#byRole.get(role) ?? 0) >= perRole)
      return refusal(
        `this role already has ${perRole} query/explain ${perRole === 1 ? 'call' : 'calls'} in flight (the limit per role)`,
      );
    count(this.#byToken, token, 1);
    count(this.#byRole, role, 1);
    try {
      if (!(await this.#admitted(signal)))
        return refusal(
          `all ${this.#limits.connections} database connections query and explain may hold are busy (the tools' share of the pool)`,
        );
      try {
        return await work();
      } finally {
        this.#release();
      }
    } finally {
      count(this.#byToken, token, -1);
      count(this.#byRole, role, -1);
    }
  }

  /** Take a running slot, waiting at most waitMs in arrival order; false when none came. */
  #admitted(signal: AbortSignal): Promise<boolean> {
    if (this.#running < this.#limits.connections && this.#queue.length === 0) {
      this.#running += 1;
      return Promise.resolve(true);
    }
    if (this.#limits.waitMs === 0 || signal.aborted)
      return Promise.resolve(false);
    return new Promise((resolve) => {
      const leave = (admitted: boolean): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', abandon);
        resolve(admitted);
      };
      const waiter: Waiter = { admit: () => leave(true) };
      const abandon = (): void => {
        const at = this.#queue.indexOf(waiter);
        if (at >= 0) this.#queue.splice(at, 1);
        leave(false);
      };
      const timer = setTimeout(abandon, this.#limits.waitMs);
      signal.addEventListener('abort', abandon, { once: true });
      this.#queue.push(waiter);
    });
  }

  /** A call ended: its slot goes to the first waiter, if any. */
  #release(): void {
    const next = this.#queue.shift();
    if (next === undefined) this.#running -= 1;
    else next.admit();
  }
}

/** `tool` with its calls run within `limiter`'s limits. */
export function limitToolCalls<TArgs>(
  tool: Tool<TArgs>,
  limiter: ToolCallLimiter,
): Tool<TArgs> {
  return {
    ...tool,
    call: (args, ctx, input) =>
      limiter.run(ctx.principal, ctx.signal, () => tool.call(args, ctx, input)),
  };
}

/**
 * Who a token is, as far as a caller cannot change it without a new token: its role with its
 * issuer and subject, or without a subject a digest of every claim it carries (its expiry and
 * issue time included, so two tokens minted apart are two tokens).
 */
function tokenKey(principal: Principal): string {
  const { sub, iss } = principal.claims;
  const who =
    typeof sub === 'string'
      ? JSON.stringify(['sub', typeof iss === 'string' ? iss : null, sub])
      : JSON.stringify([
          'claims',
          createHash('sha256')
            .update(JSON.stringify(principal.claims))
            .digest('base64url'),
        ]);
  return `${principal.role ?? ''}\0${who}`;
}

function count(counts: Map<string, number>, key: string, by: number): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next === 0) counts.delete(key);
  else counts.set(key, next);
}

function refusal(why: string): ToolResult {
  return toolError(
    `${TOOL_LIMIT}: refused before running: ${why}. Retry in ${RETRY_AFTER_SECONDS} s or once one of those calls has returned.`,
  );
}
