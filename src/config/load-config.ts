// Flags, then environment, then the optional config file → one zod-validated, frozen config, read
// once at start-up.
import { ConfigError } from '../errors.js';
import {
  loadConfigFile,
  type FileCatalogScope,
  type FileCollection,
  type FileScopes,
  type FileSensitive,
  type FileStandbys,
  type FileTools,
} from './config-file.js';
import type { FileRoleLimits } from './role-limits.js';
import { parseDatabases, type DatabaseConfig } from './databases.js';
import {
  checkEnvironment,
  configFileSetting,
  databaseEntries,
  rawSettings,
  type ConfigFlags,
} from './environment.js';
import { DEMO_CONFIG_FILE } from './package-paths.js';
import { SettingsSchema, type Settings } from './settings-schema.js';

export type Config = Readonly<
  Settings & {
    /** More databases (--database name=url, PGMCP_DATABASES): catalog, rows, live schema. */
    databases: readonly DatabaseConfig[];
    /** The config file read, if any. */
    configFile: string | undefined;
    catalog: FileCatalogScope;
    collections: readonly FileCollection[];
    /** Tables and columns whose rows need a person's consent (config file "sensitive"). */
    sensitive: readonly FileSensitive[];
    tools: FileTools;
    /** Which OAuth scopes tools and method groups need (config file "scopes"); none: no check. */
    scopes: FileScopes | undefined;
    /** Per-role overrides of the query/explain call limits (config file "limits.roles"). */
    roleLimits: Readonly<Record<string, FileRoleLimits>>;
    /** Hot standbys that take reads (config file "standbys"); none: every read on its database. */
    standbys: FileStandbys | undefined;
    /** The limits, the tools' share of the pool resolved (half of it by default, at least 1). */
    limits: Settings['limits'] & { toolConnections: number };
  }
>;

/**
 * Resolve configuration from flags and environment. Throws ConfigError whose message names the
 * setting and how to fix it; nothing is validated later, on a request.
 */
export function loadConfig(flags: ConfigFlags, env: NodeJS.ProcessEnv): Config {
  const settings = validSettings(flags, env);
  checkEnvironment(flags, env);
  const configFile = configFileSetting(
    flags,
    env,
    settings.database.mode === 'embedded' ? DEMO_CONFIG_FILE : undefined,
  );
  const databases = parseDatabases(databaseEntries(flags, env));
  return Object.freeze({
    ...settings,
    limits: {
      ...settings.limits,
      // Half the request pool by default, at least one connection: the rest is always left for
      // resources, prompts, search and fetch (issue 32 point 4).
      toolConnections:
        settings.limits.toolConnections ??
        Math.max(1, Math.floor(settings.poolSize / 2)),
    },
    configFile,
    databases,
    ...loadConfigFile(configFile, databases),
  });
}

/** The flag and environment settings, validated; every problem listed at once. */
function validSettings(flags: ConfigFlags, env: NodeJS.ProcessEnv): Settings {
  const parsed = SettingsSchema.safeParse(rawSettings(flags, env));
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((issue) => `  - ${issue.message}`)
      .join('\n');
    throw new ConfigError(
      `invalid configuration:\n${problems}\nSee docs/operations.md "Configuration" for every setting.`,
    );
  }
  const { toolConnections } = parsed.data.limits;
  if (toolConnections !== undefined && toolConnections > parsed.data.poolSize)
    throw new ConfigError(
      `PGMCP_TOOL_CONNECTIONS (${toolConnections}) must be at most PGMCP_POOL_SIZE (${parsed.data.poolSize}): it is the part of the request pool query and explain may hold.`,
    );
  return parsed.data;
}
