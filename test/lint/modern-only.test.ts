// The 2025-11-25 era sits at one edge (issue 33): removing src/legacy/, app/wire-legacy.ts and the
// lines marked `// legacy-wiring` leaves a modern-only server that compiles. This copies src/ to a
// temporary folder, removes them, and type-checks the rest; and shows the check fails when a modern
// module still imports the legacy folder.
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/version.js';

const MARK = '// legacy-wiring';

/** Every .ts file under `folder`. */
function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

const copies: string[] = [];

/** A copy of the project's src/, tsconfig and package.json, with node_modules linked. */
function copyProject(): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'pgmcp-modern-only-'));
  copies.push(root);
  cpSync(path.join(PROJECT_ROOT, 'src'), path.join(root, 'src'), {
    recursive: true,
  });
  for (const file of ['tsconfig.json', 'package.json'])
    cpSync(path.join(PROJECT_ROOT, file), path.join(root, file));
  symlinkSync(
    path.join(PROJECT_ROOT, 'node_modules'),
    path.join(root, 'node_modules'),
    'dir',
  );
  return root;
}

/** Remove the legacy folder, its wiring file and the marked lines; the files the marks were in. */
function removeLegacy(root: string): string[] {
  const src = path.join(root, 'src');
  rmSync(path.join(src, 'legacy'), { recursive: true });
  rmSync(path.join(src, 'app', 'wire-legacy.ts'));
  const marked: string[] = [];
  for (const file of sourceFiles(src)) {
    const lines = readFileSync(file, 'utf8').split('\n');
    const kept = lines.filter((line) => !line.includes(MARK));
    if (kept.length === lines.length) continue;
    marked.push(path.relative(src, file));
    writeFileSync(file, kept.join('\n'));
  }
  return marked;
}

/** tsc --noEmit over the copy's src/ with the project's compiler options: its error messages. */
function typeCheck(root: string): string[] {
  const config = ts.readConfigFile(path.join(root, 'tsconfig.json'), (file) =>
    ts.sys.readFile(file),
  );
  const parsed = ts.parseJsonConfigFileContent(
    { ...(config.config as object), include: ['src'] },
    ts.sys,
    root,
  );
  const program = ts.createProgram(parsed.fileNames, {
    ...parsed.options,
    noEmit: true,
  });
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const where =
      diagnostic.file === undefined
        ? ''
        : `${path.relative(root, diagnostic.file.fileName)}: `;
    return (
      where + ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')
    );
  });
}

afterAll(() => {
  for (const root of copies) rmSync(root, { recursive: true, force: true });
});

describe('the modern-only server', () => {
  it('compiles without src/legacy/, app/wire-legacy.ts and the lines marked legacy-wiring', () => {
    const root = copyProject();
    const marked = removeLegacy(root);
    // The marks exist, and only the composition root carries them.
    expect(marked.length).toBeGreaterThan(0);
    for (const file of marked)
      expect(file.startsWith(`app${path.sep}`) || file === 'server.ts').toBe(
        true,
      );
    // The copy really lacks the legacy code: no folder, no wiring, nothing naming either.
    const src = path.join(root, 'src');
    expect(existsSync(path.join(src, 'legacy'))).toBe(false);
    for (const file of sourceFiles(src)) {
      const text = readFileSync(file, 'utf8');
      expect(text).not.toMatch(/from '[^']*(\/legacy\/|wire-legacy)[^']*'/);
    }
    expect(typeCheck(root)).toEqual([]);
  }, 180_000);

  it('fails when a modern module imports the legacy folder', () => {
    const root = copyProject();
    const router = path.join(root, 'src', 'transport', 'http-router.ts');
    writeFileSync(
      router,
      `import { LEGACY_VERSIONS } from '../legacy/index.js';\nexport const VERSIONS = LEGACY_VERSIONS;\n${readFileSync(router, 'utf8')}`,
    );
    removeLegacy(root);
    expect(typeCheck(root)).toContainEqual(
      expect.stringMatching(
        /^src\/transport\/http-router\.ts: Cannot find module/,
      ),
    );
  }, 180_000);
});
