// The server's name and version as clients see them, and where the project's files live.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Repository root (package.json, migrations/, seeds/), found from src/ or dist/src/ alike. */
export const PROJECT_ROOT = findProjectRoot(
  path.dirname(fileURLToPath(import.meta.url)),
);

const packageJson = JSON.parse(
  readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8'),
) as { version: string };

/** The server's name, title and version: protocol/'s Implementation, declared here as a leaf. */
export const SERVER_INFO: {
  readonly name: string;
  readonly title: string;
  readonly version: string;
} = Object.freeze({
  name: 'pgmcp',
  title: 'pgmcp: PostgreSQL resources for agents',
  version: packageJson.version,
});

function findProjectRoot(start: string): string {
  for (let current = start; ; current = path.dirname(current)) {
    if (
      existsSync(path.join(current, 'package.json')) &&
      existsSync(path.join(current, 'migrations'))
    )
      return current;
    if (path.dirname(current) === current)
      throw new Error(`pgmcp: no project root above ${start}`);
  }
}
