// Public surface of config/: flags and environment, the config file and more databases → one Config.
export { loadConfig, type Config } from './load-config.js';
export { type ConfigFlags } from './environment.js';
export {
  type FileCatalogScope,
  type FileCollection,
  type FileScopes,
  type FileSensitive,
  type FileStandbys,
  type FileTools,
} from './config-file.js';
export { type FileRoleLimits } from './role-limits.js';
export { redactConnectionString, type DatabaseConfig } from './databases.js';
export {
  DEMO_CONFIG_FILE,
  MIGRATIONS_DIRECTORY,
  SEEDS_DIRECTORY,
} from './package-paths.js';
