// Local ESLint rules for pgmcp's module boundaries (STYLE §1–§3): which src folder may import
// which, folders meet through index.ts, and file names say what a file is in its layer.
import { readdirSync } from 'node:fs';
import path from 'node:path';

const SRC = path.join(import.meta.dirname, 'src');

/** The src folder, or top-level file (as `name.ts`), that `file` lies in; undefined outside src. */
function topOf(file) {
  const relative = path.relative(SRC, file);
  if (relative.startsWith('..') || path.isAbsolute(relative)) return undefined;
  const [first] = relative.split(path.sep);
  return first === undefined ? undefined : first.replace(/\.js$/, '.ts');
}

/** Calls `check(node, specifier)` for every static, dynamic and re-export module specifier. */
function eachSpecifier(check) {
  const visit = (node) => {
    if (
      node.source?.type === 'Literal' &&
      typeof node.source.value === 'string'
    )
      check(node, node.source.value);
  };
  return {
    ImportDeclaration: visit,
    ExportNamedDeclaration: visit,
    ExportAllDeclaration: visit,
    ImportExpression: visit,
  };
}

const layers = {
  meta: {
    type: 'problem',
    docs: { description: 'lower layers import nothing above them (STYLE §2)' },
    schema: [{ type: 'object', properties: { layers: { type: 'object' } } }],
    messages: {
      upward:
        '{{from}} may not import {{to}}: it may import only {{allowed}} (STYLE §2).',
    },
  },
  create(context) {
    const rules = context.options[0].layers;
    const from = topOf(context.filename);
    const allowed = from === undefined ? undefined : rules[from];
    if (allowed === undefined) return {};
    return eachSpecifier((node, specifier) => {
      if (!specifier.startsWith('.')) return;
      const to = topOf(path.resolve(path.dirname(context.filename), specifier));
      if (to === undefined || to === from || allowed.includes(to)) return;
      context.report({
        node,
        messageId: 'upward',
        data: {
          from,
          to,
          allowed: allowed.length === 0 ? 'nothing' : allowed.join(', '),
        },
      });
    });
  },
};

const folderIndex = {
  meta: {
    type: 'problem',
    docs: {
      description: 'folders meet only through their index.ts (STYLE §2)',
    },
    schema: [{ type: 'object', properties: { folders: { type: 'array' } } }],
    messages: {
      deep: 'Import {{to}}/ through its index.ts, not {{specifier}} (STYLE §2).',
    },
  },
  create(context) {
    const folders = context.options[0].folders;
    const from = topOf(context.filename);
    if (from === undefined) return {};
    return eachSpecifier((node, specifier) => {
      if (!specifier.startsWith('.')) return;
      const resolved = path.resolve(path.dirname(context.filename), specifier);
      const to = topOf(resolved);
      if (to === undefined || to === from || !folders.includes(to)) return;
      if (resolved === path.join(SRC, to, 'index.js')) return;
      context.report({ node, messageId: 'deep', data: { to, specifier } });
    });
  },
};

function sourceFiles(directory) {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(path.join(directory, entry.name))
      : entry.name.endsWith('.ts')
        ? [path.join(directory, entry.name)]
        : [],
  );
}

const fileNames = {
  meta: {
    type: 'suggestion',
    docs: {
      description:
        'kebab-case file names, none repeated across folders (STYLE §3)',
    },
    schema: [],
    messages: {
      kebab: 'File names are kebab-case (STYLE §3): {{name}}.',
      repeated:
        '{{name}} also names {{other}}: name the file after what it is in its layer (STYLE §3).',
    },
  },
  create(context) {
    const name = path.basename(context.filename);
    if (topOf(context.filename) === undefined) return {};
    return {
      Program(node) {
        if (!/^[a-z0-9]+(-[a-z0-9]+)*\.ts$/.test(name))
          context.report({ node, messageId: 'kebab', data: { name } });
        if (name === 'index.ts') return;
        const other = sourceFiles(SRC).find(
          (file) => file !== context.filename && path.basename(file) === name,
        );
        if (other !== undefined)
          context.report({
            node,
            messageId: 'repeated',
            data: { name, other: path.relative(SRC, other) },
          });
      },
    };
  },
};

/** The plugin: `pgmcp/layers`, `pgmcp/folder-index`, `pgmcp/file-names`. */
export const boundaries = {
  meta: { name: 'pgmcp-boundaries' },
  rules: { layers, 'folder-index': folderIndex, 'file-names': fileNames },
};
