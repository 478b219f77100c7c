// Flags, then environment, then the optional config file → one zod-validated, frozen config, read
// once at start-up.
import { ConfigError } from '../errors.js';
import {
  loadConfigFile,
  type FileCatalogScope,
  type FileCollection,
  type FileScopes,
  type FileSensitive,
  type FileTools,
} from './config-file.js';
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
  return parsed.data;
}
