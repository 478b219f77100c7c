// No import circle in src/, type-only imports included: import-x/no-cycle skips `import type`, so
// a circle closed by one (a legacy type named in a shared module, say) would pass `npm run lint`.
// This walks every relative import, export-from, dynamic import and import() type with the
// TypeScript parser and looks for strongly connected files.
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/version.js';

/** Every .ts file under `folder`. */
function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** The files under `root` that `file` imports in any way, types included. */
function importsOf(file: string, root: string, known: Set<string>): string[] {
  const source = ts.createSourceFile(
    file,
    readFileSync(file, 'utf8'),
    ts.ScriptTarget.Latest,
  );
  const found = new Set<string>();
  const add = (specifier: string) => {
    if (!specifier.startsWith('.')) return;
    const base = path.resolve(path.dirname(file), specifier);
    for (const candidate of [
      base.replace(/\.js$/, '.ts'),
      path.join(base, 'index.ts'),
    ])
      if (candidate.startsWith(root) && known.has(candidate)) {
        found.add(candidate);
        return;
      }
  };
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier !== undefined &&
      ts.isStringLiteral(node.moduleSpecifier)
    )
      add(node.moduleSpecifier.text);
    else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteral(node.arguments[0])
    )
      add(node.arguments[0].text);
    else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    )
      add(node.argument.literal.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return [...found];
}

/** The groups of files under `root` that import each other in a circle (Tarjan's components). */
function importCircles(root: string): string[][] {
  const files = sourceFiles(root);
  const known = new Set(files);
  const edges = new Map(
    files.map((file) => [file, importsOf(file, root, known)]),
  );
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const connect = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file) ?? 0);
    stack.push(file);
    onStack.add(file);
    for (const next of edges.get(file) ?? []) {
      if (!index.has(next)) {
        connect(next);
        low.set(file, Math.min(low.get(file) ?? 0, low.get(next) ?? 0));
      } else if (onStack.has(next))
        low.set(file, Math.min(low.get(file) ?? 0, index.get(next) ?? 0));
    }
    if (low.get(file) !== index.get(file)) return;
    const group: string[] = [];
    for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
      onStack.delete(member);
      group.push(path.relative(root, member));
      if (member === file) break;
    }
    if (group.length > 1 || (edges.get(file) ?? []).includes(file))
      circles.push(group.sort());
  };
  for (const file of files) if (!index.has(file)) connect(file);
  return circles;
}

describe('import circles', () => {
  it('src/ has none, type-only imports included', () => {
    expect(importCircles(path.join(PROJECT_ROOT, 'src'))).toEqual([]);
  });

  it('finds a circle that a type-only import closes, through an index.ts', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'pgmcp-circles-'));
    mkdirSync(path.join(root, 'shared'));
    writeFileSync(
      path.join(root, 'shared', 'index.ts'),
      "export { helper } from './helper.js';\n",
    );
    writeFileSync(
      path.join(root, 'shared', 'helper.ts'),
      "import type { Era } from '../era.js';\nexport const helper = (era: Era) => era;\n",
    );
    writeFileSync(
      path.join(root, 'era.ts'),
      "import { helper } from './shared/index.js';\nexport type Era = string;\nhelper('x');\n",
    );
    writeFileSync(path.join(root, 'alone.ts'), 'export const alone = 1;\n');
    expect(importCircles(root)).toEqual([
      ['era.ts', 'shared/helper.ts', 'shared/index.ts'],
    ]);
  });
});
