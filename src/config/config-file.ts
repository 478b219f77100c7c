// The optional JSON config file (docs/databases.md "The config file"): catalog scope and row
// collections, validated with zod; every problem names the file and the field.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import type { DatabaseConfig } from './databases.js';
import {
  LimitsFileSchema,
  roleLimitsOf,
  type FileRoleLimits,
} from './role-limits.js';

const identifier = z
  .string()
  .min(1, 'names must not be empty')
  .max(63, 'PostgreSQL names are at most 63 bytes');

/** catalog.tables[]: one table's value hints and sensitive columns (docs/databases.md "The config file"). */
const CatalogTableSchema = z
  .object({
    schema: identifier,
    table: identifier,
    valueHints: z.boolean().optional(),
    sensitive: z.boolean().optional(),
    columns: z
      .array(
        z
          .object({ name: identifier, sensitive: z.boolean().optional() })
          .strict(),
      )
      .optional(),
  })
  .strict();

/** An OAuth scope token (RFC 6749 §3.3), safe inside a WWW-Authenticate quoted string. */
const scope = z
  .string()
  .regex(
    /^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/,
    'a scope is 1-128 printable characters without spaces, quotes or backslashes',
  )
  .refine(
    (value) => value !== 'offline_access',
    'offline_access is not a scope a tool or method can need (spec §15)',
  );
const scopeList = z.array(scope).min(1).max(32);

/** scopes: which OAuth scopes tools and method groups need (docs/tools.md "Scopes"). */
const ScopesSchema = z
  .object({
    tools: z
      .partialRecord(
        z.enum(['search', 'fetch', 'query', 'explain', '*']),
        scopeList,
      )
      .optional(),
    methods: z
      .partialRecord(
        z.enum(['resources', 'prompts', 'completion', 'tools']),
        scopeList,
      )
      .optional(),
    implies: z.record(scope, scopeList).optional(),
  })
  .strict();

/** standbys: hot standbys that take reads (docs/databases.md "Standbys"). */
const StandbysSchema = z
  .object({
    servers: z
      .array(
        z
          .object({
            database: z.string().min(1).optional(),
            url: z
              .string()
              .regex(
                /^postgres(ql)?:\/\//,
                'a standby is a postgres://user:password@host:port/db URL',
              ),
          })
          .strict(),
      )
      .min(1),
    maxLagMs: z.number().int().min(0).max(3_600_000).optional(),
    maxLagBytes: z.number().int().min(0).optional(),
    waitMs: z.number().int().min(0).max(60_000).optional(),
    pollMs: z.number().int().min(50).max(60_000).optional(),
    whenUnavailable: z.enum(['primary', 'fail']).optional(),
    failover: z.enum(['follow', 'off']).optional(),
  })
  .strict();

/** The config file's shape (docs/databases.md "The config file"); unknown keys are mistakes, not ignored. */
const ConfigFileSchema = z
  .object({
    $schema: z.string().optional(),
    catalog: z
      .object({
        includeSchemas: z.array(identifier).optional(),
        excludeSchemas: z.array(identifier).optional(),
        navigatorBytes: z
          .number()
          .int()
          .min(2048)
          .max(1024 * 1024)
          .optional(),
        directoryBytes: z
          .number()
          .int()
          .min(2048)
          .max(16 * 1024 * 1024)
          .optional(),
        valueHints: z.boolean().optional(),
        policyExpressions: z.boolean().optional(),
        tables: z.array(CatalogTableSchema).optional(),
      })
      .strict()
      .optional(),
    collections: z
      .array(
        z
          .object({
            database: z.string().min(1).optional(),
            schema: identifier,
            table: identifier,
            list: z.boolean().optional(),
            titleColumn: identifier.optional(),
            searchable: z.array(identifier).min(1).max(32).optional(),
          })
          .strict(),
      )
      .optional(),
    // Tables, or some of their columns, whose rows are read only with a person's consent.
    sensitive: z
      .array(
        z
          .object({
            database: z.string().min(1).optional(),
            schema: identifier,
            table: identifier,
            columns: z.array(identifier).min(1).optional(),
          })
          .strict(),
      )
      .optional(),
    tools: z
      .object({
        disabled: z
          .array(z.enum(['search', 'fetch', 'query', 'explain']))
          .optional(),
        schemas: z.array(identifier).optional(),
        explainAnalyze: z.boolean().optional(),
        searchLimit: z.number().int().min(1).max(100).optional(),
        guardCacheMs: z.number().int().min(0).max(60_000).optional(),
        guardMaxFunctions: z.number().int().min(1).max(10_000).optional(),
      })
      .strict()
      .optional(),
    scopes: ScopesSchema.optional(),
    limits: LimitsFileSchema.optional(),
    standbys: StandbysSchema.optional(),
  })
  .strict();

type ConfigFile = z.infer<typeof ConfigFileSchema>;

/**
 * A table whose rows are resources pg://{database}/{schema}/{table}/rows/{key}: the shape of
 * resources/' CollectionConfig, which config/ may not import (the root passes one for the other).
 */
export interface FileCollection {
  /** The database's name (its URI authority); undefined: the main database. */
  readonly database: string | undefined;
  readonly schema: string;
  readonly table: string;
  /** Whether resources/list lists its rows (after the catalog). */
  readonly list: boolean;
  /** A column whose text becomes each listed row's title. */
  readonly titleColumn: string | undefined;
  /** Columns the search tool matches, in weight order. */
  readonly searchable?: readonly string[] | undefined;
}

/**
 * A table (every column, when `columns` is null) whose rows need a person's consent to read
 * (docs/consent.md): the shape of resources/' SensitiveTable.
 */
export interface FileSensitive {
  readonly database: string | undefined;
  readonly schema: string;
  readonly table: string;
  readonly columns: readonly string[] | null;
}

/** Which schemas the catalog shows: `include` (all when null) minus `exclude` (resources/' CatalogScope). */
export interface FileCatalogScope {
  readonly include: readonly string[] | null;
  readonly exclude: readonly string[];
  readonly navigatorBytes?: number | undefined;
  readonly directoryBytes?: number | undefined;
  readonly valueHints?: boolean | undefined;
  readonly policyExpressions?: boolean | undefined;
  readonly tables?: z.infer<typeof CatalogTableSchema>[] | undefined;
}

/** The tool settings (docs/tools.md "Configuration"). */
export interface FileTools {
  /** Tools not served. */
  readonly disabled: readonly string[];
  /** The only schemas query and explain may read (null: every schema the role may). */
  readonly schemas: readonly string[] | null;
  /** Whether explain may run EXPLAIN ANALYZE (executes the statement, read-only and timed). */
  readonly explainAnalyze: boolean;
  /** How many results search returns by default. */
  readonly searchLimit: number;
  /** How long the statement guard reuses a resolution of the same names (default 2000 ms). */
  readonly guardCacheMs?: number | undefined;
  /** Most functions the guard inspects for one statement before refusing it (default 200). */
  readonly guardMaxFunctions?: number | undefined;
}

/** The scope map (docs/tools.md "Scopes"): auth/'s ScopeSettings; none without `scopes`. */
export interface FileScopes {
  readonly tools: Readonly<Record<string, readonly string[]>>;
  readonly methods: Readonly<Record<string, readonly string[]>>;
  readonly implies: Readonly<Record<string, readonly string[]>>;
}

/** A database's standbys and the bounds on reading from them (docs/databases.md "Standbys"). */
export interface FileStandbys {
  /** Each standby's URL and the database it serves (undefined: the main one). */
  readonly servers: readonly {
    readonly database: string | undefined;
    readonly url: string;
  }[];
  readonly maxLagMs: number;
  readonly maxLagBytes: number | undefined;
  readonly waitMs: number;
  readonly pollMs: number;
  readonly whenUnavailable: 'primary' | 'fail';
  /** Whether writes, LISTEN and the WAL slot follow a promoted standby (docs/databases.md "Failover"). */
  readonly failover: 'follow' | 'off';
}

/** What the config file says, checked against the databases given: defaults when there is none. */
export function loadConfigFile(
  configFile: string | undefined,
  databases: readonly DatabaseConfig[],
): {
  catalog: FileCatalogScope;
  collections: FileCollection[];
  sensitive: FileSensitive[];
  tools: FileTools;
  scopes: FileScopes | undefined;
  roleLimits: Readonly<Record<string, FileRoleLimits>>;
  standbys: FileStandbys | undefined;
} {
  const file = configFile === undefined ? {} : readConfigFile(configFile);
  return {
    catalog: {
      include: file.catalog?.includeSchemas ?? null,
      exclude: file.catalog?.excludeSchemas ?? [],
      navigatorBytes: file.catalog?.navigatorBytes,
      directoryBytes: file.catalog?.directoryBytes,
      valueHints: file.catalog?.valueHints,
      policyExpressions: file.catalog?.policyExpressions,
      tables: file.catalog?.tables,
    },
    collections: fileCollections(file, configFile, databases),
    sensitive: (file.sensitive ?? []).map((entry) => ({
      database: entry.database,
      schema: entry.schema,
      table: entry.table,
      columns: entry.columns ?? null,
    })),
    tools: {
      disabled: file.tools?.disabled ?? [],
      schemas: file.tools?.schemas ?? null,
      explainAnalyze: file.tools?.explainAnalyze ?? false,
      searchLimit: file.tools?.searchLimit ?? 20,
      guardCacheMs: file.tools?.guardCacheMs,
      guardMaxFunctions: file.tools?.guardMaxFunctions,
    },
    scopes:
      file.scopes === undefined
        ? undefined
        : {
            tools: file.scopes.tools ?? {},
            methods: file.scopes.methods ?? {},
            implies: file.scopes.implies ?? {},
          },
    roleLimits: roleLimitsOf(file.limits),
    standbys: fileStandbys(file, configFile, databases),
  };
}

/** The file's standbys with defaults; each in a database that is given. */
function fileStandbys(
  file: ConfigFile,
  configFile: string | undefined,
  databases: readonly DatabaseConfig[],
): FileStandbys | undefined {
  const standbys = file.standbys;
  if (standbys === undefined) return undefined;
  for (const { database } of standbys.servers)
    if (
      database !== undefined &&
      !databases.some((entry) => entry.name === database)
    )
      throw new ConfigError(
        `${configFile}: a standby names database "${database}", which is not given with --database ${database}=… (or PGMCP_DATABASES).`,
      );
  return {
    servers: standbys.servers.map(({ database, url }) => ({ database, url })),
    maxLagMs: standbys.maxLagMs ?? 10_000,
    maxLagBytes: standbys.maxLagBytes,
    waitMs: standbys.waitMs ?? 1000,
    pollMs: standbys.pollMs ?? 500,
    whenUnavailable: standbys.whenUnavailable ?? 'primary',
    failover: standbys.failover ?? 'follow',
  };
}

/** The file's collections with defaults; each listed once, in a database that is given. */
function fileCollections(
  file: ConfigFile,
  configFile: string | undefined,
  databases: readonly DatabaseConfig[],
): FileCollection[] {
  const collections = (file.collections ?? []).map((collection) => ({
    database: collection.database,
    schema: collection.schema,
    table: collection.table,
    list: collection.list ?? false,
    titleColumn: collection.titleColumn,
    searchable: collection.searchable,
  }));
  const seen = new Set<string>();
  for (const { database, schema, table } of collections) {
    const key = JSON.stringify([database, schema, table]);
    if (seen.has(key))
      throw new ConfigError(
        `${configFile}: collection ${schema}.${table} is listed twice.`,
      );
    seen.add(key);
    if (
      database !== undefined &&
      !databases.some((entry) => entry.name === database)
    )
      throw new ConfigError(
        `${configFile}: collection ${schema}.${table} names database "${database}", which is not given with --database ${database}=… (or PGMCP_DATABASES).`,
      );
  }
  return collections;
}

/** Read and validate the JSON config file; every problem says which file and which field. */
function readConfigFile(file: string): ConfigFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(
      `cannot read the config file ${file} (PGMCP_CONFIG / --config): ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(
      `the config file ${file} is not valid JSON: ${(error as Error).message}`,
    );
  }
  const parsed = ConfigFileSchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map(
        (issue) =>
          `  - ${issue.path.length === 0 ? '(top level)' : issue.path.join('.')}: ${issue.message}`,
      )
      .join('\n');
    throw new ConfigError(
      `invalid config file ${file}:\n${problems}\nSee docs/databases.md "The config file".`,
    );
  }
  return parsed.data;
}
