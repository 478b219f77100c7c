// The statement guard of query and explain (issue 32 points 1, 2): what a caller's statement can
// execute, read with the real parser and resolved through the catalog, refused when pgmcp cannot
// vouch for it; and which relations it can read, for the consent gate.
import { SqlStatementError, type DatabaseHandle } from '../../db/index.js';
import {
  resolveGuardNames,
  type GuardCatalog,
  type QualifiedName,
  type ReachedFunction,
} from '../statements/sql-guard-statements.js';
import { deniedFunction, STATISTICS_RELATIONS } from './deny-list.js';
import {
  bodyNames,
  loadParser,
  statementNames,
  StatementShapeError,
  type UsedNames,
} from './statement-names.js';

/** What the guard found a statement can reach (it was not refused). */
export interface GuardVerdict {
  /** Every relation the statement can reach: named, under views and policies, in function bodies. */
  readonly relations: readonly QualifiedName[];
  /** It reaches a non-builtin function with a body: relations above may be read by that body. */
  readonly bodies: boolean;
  /** It reaches a pgmcp function that runs dynamic SQL: it may read any table the role may. */
  readonly dynamicReads: boolean;
  /** It can read planner statistics (pg_statistic and the views over it). */
  readonly statistics: boolean;
  /** Some stored resource is marked sensitive (pgmcp.resources). */
  readonly sensitiveResources: boolean;
}

export interface SqlGuardOptions {
  readonly db: DatabaseHandle;
  /** How long a resolution is reused for the same names (config tools.guardCacheMs). */
  readonly cacheMs: number;
  /** Most functions inspected for one statement; past it the statement is refused (tools.guardMaxFunctions). */
  readonly maxFunctions: number;
  /** Settings pgmcp sets per request: a function whose SET clause sets one is refused. */
  readonly perRequestSettings: readonly string[];
}

/** The guard: `inspect` refuses (SqlStatementError 42601 or 42501) or says what the statement reaches. */
export interface SqlGuard {
  inspect(sql: string): Promise<GuardVerdict>;
}

/** The guard's settings when the config file does not name them (docs/tools.md "Configuration"). */
export const SQL_GUARD_DEFAULTS = { cacheMs: 2000, maxFunctions: 200 } as const;

/** pgmcp's own schema: its functions' bodies are pgmcp's (still refused by name). */
const PGMCP_SCHEMA = 'pgmcp';
const CACHE_ENTRIES = 1000;
/** Statements up to this length keep their parsed names (CACHE_ENTRIES of them at most). */
const TEXT_CACHE_CHARS = 4096;
/** Languages whose non-builtin functions the guard reads (sql, plpgsql) or trusts (internal, c). */
const KNOWN_LANGUAGES = new Set(['sql', 'plpgsql', 'internal', 'c']);

/** Create the guard (see the file comment and docs/tools.md "Threat model"). */
export function createSqlGuard(options: SqlGuardOptions): SqlGuard {
  // Per name set: the resolution, shared by the calls that ask while it runs (one catalog query
  // for a burst of identical statements), refusals included.
  // Per statement text (short ones): its names, so a repeated statement is not parsed again.
  const texts = new Map<string, { names: UsedNames; key: string }>();
  const parsed = async (sql: string) => {
    const known = texts.get(sql);
    if (known !== undefined) return known;
    await loadParser();
    let names: UsedNames;
    try {
      names = statementNames(sql);
    } catch (error) {
      throw shapeError(error);
    }
    const key = JSON.stringify([
      names.functions,
      names.relations,
      names.types,
      names.operators,
    ]);
    if (sql.length <= TEXT_CACHE_CHARS) remember(texts, sql, { names, key });
    return { names, key };
  };
  const cache = new Map<
    string,
    { at: number; verdict: Promise<GuardVerdict> }
  >();
  return {
    async inspect(sql) {
      const { names, key } = await parsed(sql);
      const cached = cache.get(key);
      if (cached !== undefined && Date.now() - cached.at < options.cacheMs)
        return cached.verdict;
      const verdict = resolve(options, names);
      const entry = { at: Date.now(), verdict };
      remember(cache, key, entry);
      // A failure of the database is not a verdict: the next call asks again.
      verdict.catch((error: unknown) => {
        if (!(error instanceof SqlStatementError) && cache.get(key) === entry)
          cache.delete(key);
      });
      return verdict;
    },
  };
}

/** Set `key` in `map`, forgetting the oldest entry when it holds CACHE_ENTRIES. */
function remember<TValue>(
  map: Map<string, TValue>,
  key: string,
  value: TValue,
): void {
  if (map.size >= CACHE_ENTRIES && !map.has(key)) {
    const oldest = map.keys().next();
    if (oldest.done !== true) map.delete(oldest.value);
  }
  map.set(key, value);
}

function refuse(reason: string): SqlStatementError {
  return new SqlStatementError(
    '42501',
    `pgmcp refuses this statement: ${reason} (docs/tools.md "Threat model")`,
    undefined,
  );
}

function shapeError(error: unknown): Error {
  if (!(error instanceof StatementShapeError)) return error as Error;
  const position = (
    error.cause as { sqlDetails?: { cursorPosition?: unknown } } | undefined
  )?.sqlDetails?.cursorPosition;
  return new SqlStatementError(
    '42601',
    `pgmcp refuses this statement: ${error.message}`,
    typeof position === 'number' ? position + 1 : undefined,
  );
}

const nameKey = (name: QualifiedName) => `${name.schema}.${name.name}`;

/** What resolve gathers across its rounds. */
interface Reach {
  readonly asked: Record<
    'functions' | 'relations' | 'types' | 'operators',
    Set<string>
  >;
  readonly functions: Map<number, ReachedFunction>;
  readonly relations: Map<string, QualifiedName>;
  sensitiveResources: boolean;
  dynamicReads: boolean;
}

/** The names of `list` not asked for yet, each once; they count as asked from now on. */
function fresh(list: readonly QualifiedName[], asked: Set<string>) {
  const out = new Map<string, QualifiedName>();
  for (const name of list)
    if (!asked.has(nameKey(name))) out.set(nameKey(name), name);
  for (const name of out.keys()) asked.add(name);
  return [...out.values()];
}

/**
 * Resolve the statement's names, then, round by round, the names in the bodies of the functions
 * they reach, until nothing new turns up; refuse on the way what the guard cannot vouch for.
 */
async function resolve(
  options: SqlGuardOptions,
  statement: UsedNames,
): Promise<GuardVerdict> {
  const reach: Reach = {
    asked: {
      functions: new Set(),
      relations: new Set(),
      types: new Set(),
      operators: new Set(),
    },
    functions: new Map(),
    relations: new Map(),
    sensitiveResources: false,
    dynamicReads: false,
  };
  let pending: UsedNames = statement;
  for (let round = 0; ; round += 1) {
    const lookup = {
      functions: fresh(pending.functions, reach.asked.functions),
      relations: fresh(pending.relations, reach.asked.relations),
      types: fresh(pending.types, reach.asked.types),
      operators: fresh(pending.operators, reach.asked.operators),
      userDefined: round === 0,
    };
    const empty =
      lookup.functions.length +
      lookup.relations.length +
      lookup.types.length +
      lookup.operators.length;
    if (round > 0 && empty === 0) break;
    const found: GuardCatalog = await resolveGuardNames(options.db, lookup);
    reach.sensitiveResources ||= found.sensitiveResources;
    for (const relation of found.relations)
      reach.relations.set(nameKey(relation), relation);
    pending = {
      functions: [],
      relations: [],
      types: [],
      operators: [],
      dynamic: false,
    };
    for (const fn of found.functions)
      inspectFunction(options, { reach, next: pending }, fn);
  }
  const reached = [...reach.relations.values()];
  return {
    relations: reached,
    bodies: [...reach.functions.values()].some(
      (fn) => fn.source !== null && fn.source !== '',
    ),
    dynamicReads: reach.dynamicReads,
    statistics: reached.some((relation) =>
      STATISTICS_RELATIONS.has(nameKey(relation)),
    ),
    sensitiveResources: reach.sensitiveResources,
  };
}

/**
 * Check a function newly reached, and add the names its body uses to `next`. A pgmcp function's
 * body is pgmcp's: only the relations it names count (for consent), and its dynamic SQL means it
 * may read any table (dynamicReads) rather than a refusal.
 */
function inspectFunction(
  options: SqlGuardOptions,
  { reach, next }: { readonly reach: Reach; readonly next: UsedNames },
  fn: ReachedFunction,
): void {
  if (reach.functions.has(fn.oid)) return;
  reach.functions.set(fn.oid, fn);
  if (reach.functions.size > options.maxFunctions)
    throw refuse(
      `it reaches more than ${options.maxFunctions} functions, more than pgmcp inspects (tools.guardMaxFunctions)`,
    );
  checkFunction(options, fn);
  if (fn.source === null || fn.source === '') return;
  const body = bodyOf(fn);
  next.relations.push(...body.relations);
  if (fn.schema === PGMCP_SCHEMA) {
    reach.dynamicReads ||= body.dynamic;
    return;
  }
  if (body.dynamic)
    throw refuse(
      `it reaches ${fn.schema}.${fn.name}, which runs SQL built at run time (EXECUTE)`,
    );
  next.functions.push(...body.functions);
  next.types.push(...body.types);
  next.operators.push(...body.operators);
}

function bodyOf(fn: ReachedFunction): UsedNames {
  try {
    return bodyNames(fn.language, fn.source ?? '');
  } catch (error) {
    throw refuse(
      `the body of ${fn.schema}.${fn.name} cannot be read (${error instanceof Error ? error.message : String(error)})`,
    );
  }
}

/** Refuse a function by name, language or SET clause (docs/tools.md "Threat model"). */
function checkFunction(options: SqlGuardOptions, fn: ReachedFunction): void {
  const denied = deniedFunction(fn.name);
  if (denied !== undefined)
    throw refuse(`it reaches ${fn.schema}.${fn.name}, which ${denied}`);
  if (!fn.builtin && !KNOWN_LANGUAGES.has(fn.language))
    throw refuse(
      `it reaches ${fn.schema}.${fn.name}, written in ${fn.language}, which pgmcp cannot inspect`,
    );
  for (const entry of fn.config) {
    const setting = entry.slice(0, entry.indexOf('=')).toLowerCase();
    if (
      setting === 'role' ||
      setting === 'session_authorization' ||
      options.perRequestSettings.includes(setting)
    )
      throw refuse(
        `it reaches ${fn.schema}.${fn.name}, which sets ${setting} (a setting pgmcp sets per request)`,
      );
  }
}
