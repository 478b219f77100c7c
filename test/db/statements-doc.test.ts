// docs/statements.md against src/db/: it names every named prepared statement, and its "Built
// with Kysely" table lists exactly those compiled by prepare().
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DB = path.join(ROOT, 'src', 'db');

// Every file under src/db/, its folders (driver/, ad-hoc/, …) included.
const source = readdirSync(DB, { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.ts'))
  .map((file) => readFileSync(path.join(DB, file), 'utf8'))
  .join('\n');
const doc = readFileSync(path.join(ROOT, 'docs', 'statements.md'), 'utf8');

const names = (text: string, pattern: RegExp): string[] =>
  [
    ...new Set([...text.matchAll(pattern)].map((match) => match[1] ?? '')),
  ].sort();

// A statement is named either in a { name: '…' } object or as prepare()'s first argument.
const BUILT = /prepare\(\s*'(pgmcp_[a-z_]+)'/g;
const NAMED = /(?:name: |prepare\(\s*)'(pgmcp_[a-z_]+)'/g;
const LISTED = /`(pgmcp_[a-z_]+)`/g;

const section = (heading: string): string => {
  const start = doc.indexOf(`\n## ${heading}\n`);
  const end = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, end === -1 ? undefined : end);
};

describe('docs/statements.md', () => {
  it('lists every named prepared statement in src/db, and no other', () => {
    const listed = names(
      section('Built with Kysely') + section('Raw SQL'),
      LISTED,
    );
    expect(listed).toEqual(names(source, NAMED));
  });

  it('lists as built with Kysely exactly the statements prepare() compiles', () => {
    expect(names(section('Built with Kysely'), LISTED)).toEqual(
      names(source, BUILT),
    );
  });
});
