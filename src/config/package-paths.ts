// Where the package keeps the files it ships: migrations, seed datasets, the demo's config file.
import path from 'node:path';
import { PROJECT_ROOT } from '../version.js';

export const MIGRATIONS_DIRECTORY = path.join(PROJECT_ROOT, 'migrations');
export const SEEDS_DIRECTORY = path.join(PROJECT_ROOT, 'seeds');

/** The demo's config file, used by the embedded default when no other is given. */
export const DEMO_CONFIG_FILE = path.join(
  SEEDS_DIRECTORY,
  'demo',
  'pgmcp.config.json',
);
