// Which OAuth scopes a request needs (issue 32 point 11): the config file's scope map read as
// rules for tools and method groups, checked against the scopes a principal holds.
import { ProtocolError } from '../errors.js';
import type { Principal } from './principal.js';

/** The config file's `scopes` object (docs/tools.md "Scopes"); every list is scopes all needed. */
export interface ScopeSettings {
  /** Per tool name, and `*` for every tool not named: the scopes tools/call of it needs. */
  readonly tools: Readonly<Record<string, readonly string[]>>;
  /** Per method group (resources, prompts, completion, tools): the scopes its methods need. */
  readonly methods: Readonly<Record<string, readonly string[]>>;
  /** A broader scope and the narrower ones it grants (spec §15: account for hierarchies). */
  readonly implies: Readonly<Record<string, readonly string[]>>;
}

/** The method groups a scope may guard, and the methods in each (both eras). */
export const SCOPED_METHOD_GROUPS: Readonly<Record<string, readonly string[]>> =
  {
    resources: [
      'resources/list',
      'resources/templates/list',
      'resources/read',
      'subscriptions/listen',
      'resources/subscribe',
    ],
    prompts: ['prompts/list', 'prompts/get'],
    completion: ['completion/complete'],
    tools: ['tools/list', 'tools/call'],
  };

/** Decides, per principal, which methods and tools its scopes allow. */
export interface ScopePolicy {
  /** Whether any scope is required at all (false: behaviour as without a scope map). */
  readonly active: boolean;
  /** Every scope the map names, sorted: the metadata's `scopes_supported`. */
  readonly supported: readonly string[];
  /** Throws INSUFFICIENT_SCOPE when `principal` may not call `method`. */
  checkMethod(principal: Principal, method: string): void;
  /** Throws INSUFFICIENT_SCOPE when `principal` may not call the tool `name`. */
  checkTool(principal: Principal, name: string): void;
  /** Whether `principal` may call the tool `name` (tools/list shows only those). */
  allowsTool(principal: Principal, name: string): boolean;
}

/** The scopes a token's claims grant: `scope` (space-separated, RFC 8693) and `scp` (array or string). */
export function claimedScopes(
  claims: Readonly<Record<string, unknown>>,
): string[] {
  const scopes = new Set<string>();
  for (const value of [claims['scope'], claims['scp']]) {
    const entries =
      typeof value === 'string'
        ? value.split(/\s+/)
        : Array.isArray(value)
          ? value.filter((entry) => typeof entry === 'string')
          : [];
    for (const entry of entries) if (entry !== '') scopes.add(entry);
  }
  return [...scopes];
}

/** A policy over `settings`; undefined settings: nothing is required. */
export function createScopePolicy(
  settings: ScopeSettings | undefined,
): ScopePolicy {
  const tools = settings?.tools ?? {};
  const methods = new Map<string, readonly string[]>();
  for (const [group, needed] of Object.entries(settings?.methods ?? {}))
    for (const method of SCOPED_METHOD_GROUPS[group] ?? [])
      methods.set(method, needed);
  const implies = settings?.implies ?? {};
  const named = [
    ...Object.values(tools),
    ...Object.values(settings?.methods ?? {}),
    ...Object.keys(implies),
    ...Object.values(implies),
  ].flat();
  // Holding a scope grants what it implies, and what those imply in turn.
  const expand = (held: readonly string[]): Set<string> => {
    const all = new Set(held);
    const pending = [...held];
    for (let scope = pending.pop(); scope !== undefined; scope = pending.pop())
      for (const narrower of implies[scope] ?? [])
        if (!all.has(narrower)) {
          all.add(narrower);
          pending.push(narrower);
        }
    return all;
  };
  const missing = (
    principal: Principal,
    needed: readonly string[] | undefined,
  ): boolean => {
    // No token (stdio, PGMCP_AUTH=none without PGMCP_SCOPES): scopes do not limit the caller.
    if (needed === undefined || principal.scopes === undefined) return false;
    const held = expand(principal.scopes);
    return needed.some((scope) => !held.has(scope));
  };
  const toolNeeds = (name: string): readonly string[] | undefined =>
    Object.hasOwn(tools, name) ? tools[name] : tools['*'];
  const refuse = (what: string, needed: readonly string[]): never => {
    throw new ProtocolError(
      'INSUFFICIENT_SCOPE',
      `Insufficient scope: ${what} needs the scope ${needed.join(' ')}.`,
      { data: { scope: needed.join(' ') } },
    );
  };
  return {
    active: named.length > 0,
    supported: [...new Set(named)].sort(),
    checkMethod(principal, method) {
      const needed = methods.get(method);
      if (missing(principal, needed)) refuse(method, needed ?? []);
    },
    checkTool(principal, name) {
      const needed = toolNeeds(name);
      if (missing(principal, needed)) refuse(`the tool ${name}`, needed ?? []);
    },
    allowsTool: (principal, name) => !missing(principal, toolNeeds(name)),
  };
}
