// README and docs/: links that resolve inside the repository, sections that exist, and no prose
// tied to one machine or one day (figures live in the tables the bench writes).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../src/version.js';

const DOCS = [
  'README.md',
  ...readdirSync(path.join(PROJECT_ROOT, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .map((file) => `docs/${file}`),
];
const read = (file: string) =>
  readFileSync(path.join(PROJECT_ROOT, file), 'utf8');
/** Markdown without fenced code blocks (links and words there are examples, not prose). */
const prose = (file: string) => read(file).replace(/^```[^]*?^```/gm, '');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}
const headings = (file: string): string[] =>
  [...prose(file).matchAll(/^#{1,6} (.+)$/gm)].map((match) =>
    (match[1] ?? '').replace(/`/g, ''),
  );

/** Prose that dates itself or describes where it was written, not what pgmcp does. */
const FORBIDDEN = [
  /\bthis (machine|session|VM|box|laptop)\b/i,
  /\b(earlier|previous|last) session\b/i,
  /\bVM\b/,
  /\b(today|yesterday|tonight)\b/i,
  /\bthis (day|morning|week)\b/i,
  /\.\.\/shared\b/,
  /\bROADMAP\.md\b/,
];

/** Files under `directory` (relative to the root) whose names end in one of `extensions`. */
function sources(directory: string, extensions: string[]): string[] {
  return readdirSync(path.join(PROJECT_ROOT, directory)).flatMap((name) => {
    const relative = `${directory}/${name}`;
    if (statSync(path.join(PROJECT_ROOT, relative)).isDirectory())
      return sources(relative, extensions);
    return extensions.some((extension) => name.endsWith(extension))
      ? [relative]
      : [];
  });
}

describe('README and docs/', () => {
  it.each(DOCS)('%s has no prose about machines, sessions or days', (file) => {
    const text = prose(file);
    for (const pattern of FORBIDDEN) expect(text).not.toMatch(pattern);
  });

  it.each(DOCS)(
    '%s links only to files and sections that exist in the repository',
    (file) => {
      const broken: string[] = [];
      for (const [, target] of prose(file).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (target === undefined || /^(https?|mailto):/.test(target)) continue;
        const [pathPart = '', hash] = target.split('#');
        const resolved =
          pathPart === ''
            ? path.join(PROJECT_ROOT, file)
            : path.resolve(PROJECT_ROOT, path.dirname(file), pathPart);
        const relative = path.relative(PROJECT_ROOT, resolved);
        if (relative.startsWith('..')) broken.push(`${target} (outside)`);
        else if (!statSync(resolved, { throwIfNoEntry: false }))
          broken.push(`${target} (no file)`);
        else if (
          hash !== undefined &&
          !headings(relative).map(anchor).includes(hash)
        )
          broken.push(`${target} (no section)`);
      }
      expect(broken).toEqual([]);
    },
  );

  it('every section of README or docs/ that code and migrations name exists', () => {
    const files = [
      ...sources('src', ['.ts']),
      ...sources('bench', ['.ts', '.sh']),
      ...sources('migrations', ['.sql']),
      ...sources('test', ['.ts']),
    ];
    const missing: string[] = [];
    for (const file of files)
      for (const [, doc, section] of read(file).matchAll(
        /\b(README|docs\/[a-z-]+\.md)\s+\(?"([^"]+)"/g,
      )) {
        const target = doc === 'README' ? 'README.md' : (doc ?? '');
        const exists =
          statSync(path.join(PROJECT_ROOT, target), {
            throwIfNoEntry: false,
          }) && headings(target).includes(section ?? '');
        if (!exists) missing.push(`${file}: ${doc} "${section}"`);
      }
    expect(missing).toEqual([]);
  });
});
