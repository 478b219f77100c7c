// The module boundaries as eslint.config.js configures them (STYLE §1–§3): the local rules of
// eslint.boundaries.js, and the driver, pool and SQL restrictions, each shown reporting a violating
// snippet and accepting an allowed one. `npm run lint` applies them to the code itself.
import path from 'node:path';
import { ESLint, Linter, RuleTester, type Rule } from 'eslint';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/version.js';
import { match } from '../setup/matchers.js';

RuleTester.describe = describe;
RuleTester.it = it;
RuleTester.itOnly = it.only;

/** The parts of a calculated config these tests read. */
interface FileConfig {
  readonly plugins: Record<
    string,
    { readonly rules?: Record<string, unknown> }
  >;
  readonly rules: Record<string, Linter.RuleEntry | undefined>;
}

const eslint = new ESLint({ cwd: PROJECT_ROOT });

/** An absolute path in the repository, for a snippet's fake file name. */
function file(relative: string): string {
  return path.join(PROJECT_ROOT, relative);
}

async function configFor(relative: string): Promise<FileConfig> {
  return (await eslint.calculateConfigForFile(file(relative))) as FileConfig;
}

const srcConfig = await configFor('src/resources/list.ts');

/** A local rule as the config loads it, with the options the config gives it. */
function localRule(name: string): {
  rule: Rule.RuleModule;
  options: unknown[];
} {
  const rule = srcConfig.plugins['pgmcp']?.rules?.[name];
  const entry = srcConfig.rules[`pgmcp/${name}`];
  if (rule === undefined || !Array.isArray(entry))
    throw new Error(`eslint.config.js does not configure pgmcp/${name}`);
  return { rule: rule as Rule.RuleModule, options: entry.slice(1) };
}

const tester = new RuleTester();

describe('pgmcp/layers', () => {
  const { rule, options } = localRule('layers');
  const upward = [{ messageId: 'upward' }];
  tester.run('pgmcp/layers', rule, {
    valid: [
      {
        code: "import { ProtocolError } from '../errors.js';",
        filename: file('src/db/example.ts'),
        options,
      },
      {
        code: "import { createDatabase } from './pool.js';",
        filename: file('src/db/example.ts'),
        options,
      },
      {
        code: "import { runRequestQuery } from '../db/index.js';",
        filename: file('src/resources/example.ts'),
        options,
      },
      {
        code: "import { createLegacyAdapter } from '../legacy/index.js';",
        filename: file('src/app/wire-legacy.ts'),
        options,
      },
      {
        code: "import { createDispatcher } from '../../protocol/index.js';",
        filename: file('src/legacy/era/example.ts'),
        options,
      },
      // The top, in order: main.ts → cli/ → server.ts → app/.
      {
        code: "import { COMMANDS } from './cli/index.js';",
        filename: file('src/main.ts'),
        options,
      },
      {
        code: "import { startServer } from '../server.js';",
        filename: file('src/cli/example.ts'),
        options,
      },
      {
        code: "import { openDatabase } from '../app/index.js';",
        filename: file('src/cli/example.ts'),
        options,
      },
      {
        code: "import { createApp } from './app/index.js';",
        filename: file('src/server.ts'),
        options,
      },
    ],
    invalid: [
      {
        code: "import { COMMANDS } from '../cli/index.js';",
        filename: file('src/app/example.ts'),
        options,
        errors: [
          {
            messageId: 'upward',
            data: {
              from: 'app',
              to: 'cli',
              allowed:
                'errors.ts, leading-statement.ts, log.ts, version.ts, observability, auth, protocol, db, config, resources, tools, prompts, notifications, transport, legacy',
            },
          },
        ],
      },
      {
        code: "import { COMMANDS } from '../cli/index.js';",
        filename: file('src/db/example.ts'),
        options,
        errors: upward,
      },
      // Issue 33: the 2025-11-25 era is at the edge; only app/ imports it, no modern folder does.
      ...[
        'protocol',
        'transport',
        'notifications',
        'db',
        'resources',
        'tools',
        'prompts',
        'auth',
        'config',
        'observability',
        'cli',
      ].map((folder) => ({
        code: "import { LegacySession } from '../legacy/index.js';",
        filename: file(`src/${folder}/example.ts`),
        options,
        errors: upward,
      })),
      {
        code: "import { LegacySession } from './legacy/index.js';",
        filename: file('src/server.ts'),
        options,
        errors: upward,
      },
      // The legacy folder reaches the store only through what app/ hands it, and never app/ itself.
      {
        code: "import { createClientSessionStore } from '../db/index.js';",
        filename: file('src/legacy/example.ts'),
        options,
        errors: upward,
      },
      {
        code: "import { createApp } from '../../app/index.js';",
        filename: file('src/legacy/http/example.ts'),
        options,
        errors: upward,
      },
      {
        code: "import { COMMANDS } from './cli/index.js';",
        filename: file('src/server.ts'),
        options,
        errors: upward,
      },
      {
        code: "import { createProgress } from '../cli/index.js';",
        filename: file('src/app/open-database.ts'),
        options,
        errors: upward,
      },
      {
        code: "import { startServer } from '../server.js';",
        filename: file('src/app/example.ts'),
        options,
        errors: upward,
      },
      {
        code: "import { openDatabase } from '../app/index.js';",
        filename: file('src/resources/example.ts'),
        options,
        errors: upward,
      },
      {
        code: "import { main } from '../main.js';",
        filename: file('src/cli/example.ts'),
        options,
        errors: upward,
      },
      {
        code: "import { readableUris } from '../resources/index.js';",
        filename: file('src/db/example.ts'),
        options,
        errors: [
          {
            messageId: 'upward',
            data: {
              from: 'db',
              to: 'resources',
              allowed:
                'errors.ts, leading-statement.ts, auth, log.ts, version.ts, observability',
            },
          },
        ],
      },
      {
        code: "import { createDatabase } from './db/index.js';",
        filename: file('src/errors.ts'),
        options,
        errors: upward,
      },
      {
        code: "export { runRequestQuery } from '../db/index.js';",
        filename: file('src/transport/example.ts'),
        options,
        errors: upward,
      },
      {
        code: "const resources = await import('../resources/index.js');",
        filename: file('src/protocol/example.ts'),
        options,
        errors: upward,
      },
    ],
  });
});

describe('pgmcp/folder-index', () => {
  const { rule, options } = localRule('folder-index');
  tester.run('pgmcp/folder-index', rule, {
    valid: [
      {
        code: "import { runRequestQuery } from '../db/index.js';",
        filename: file('src/resources/example.ts'),
        options,
      },
      {
        code: "import { keysetPage } from './keyset.js';",
        filename: file('src/resources/example.ts'),
        options,
      },
      {
        code: "import { ProtocolError } from '../errors.js';",
        filename: file('src/resources/example.ts'),
        options,
      },
    ],
    invalid: [
      {
        code: "import { createDatabase } from '../db/pool.js';",
        filename: file('src/resources/example.ts'),
        options,
        errors: [
          {
            messageId: 'deep',
            data: { to: 'db', specifier: '../db/pool.js' },
          },
        ],
      },
      {
        code: "export { createDatabase } from './db/pool.js';",
        filename: file('src/example.ts'),
        options,
        errors: [{ messageId: 'deep' }],
      },
      {
        code: "import { createLegacyAdapter } from '../legacy/era/legacy-adapter.js';",
        filename: file('src/app/wire-legacy.ts'),
        options,
        errors: [{ messageId: 'deep' }],
      },
      {
        code: "import { SERVE_COMMAND } from './cli/serve-command.js';",
        filename: file('src/main.ts'),
        options,
        errors: [
          {
            messageId: 'deep',
            data: { to: 'cli', specifier: './cli/serve-command.js' },
          },
        ],
      },
    ],
  });
});

describe('pgmcp/file-names', () => {
  const { rule, options } = localRule('file-names');
  tester.run('pgmcp/file-names', rule, {
    valid: [
      {
        name: 'a kebab-case name no other folder uses',
        code: '',
        filename: file('src/db/example-statements.ts'),
        options,
      },
      // Every folder has its own index.ts.
      {
        name: 'index.ts',
        code: '',
        filename: file('src/db/index.ts'),
        options,
      },
    ],
    invalid: [
      {
        name: 'a camelCase name',
        code: '',
        filename: file('src/db/exampleStatements.ts'),
        options,
        errors: [{ messageId: 'kebab' }],
      },
      {
        name: 'a name another folder uses',
        code: '',
        filename: file('src/transport/keyset.ts'),
        options,
        errors: [
          {
            messageId: 'repeated',
            data: { name: 'keyset.ts', other: 'resources/keyset.ts' },
          },
        ],
      },
    ],
  });
});

/** The messages the configured restrictions give `code` in the file `relative`. */
async function restrictions(code: string, relative: string): Promise<string[]> {
  const config = await configFor(relative);
  const rules: Linter.RulesRecord = {};
  for (const name of ['no-restricted-imports', 'no-restricted-syntax']) {
    const entry = config.rules[name];
    if (entry !== undefined) rules[name] = entry;
  }
  return new Linter({ cwd: PROJECT_ROOT })
    .verify(code, [{ files: ['**/*.ts'], rules }], file(relative))
    .map((message) => message.message);
}

describe('drivers, pool and SQL', () => {
  it('keeps each driver in its one folder, and Node modules under node: names', async () => {
    expect(
      await restrictions("import pg from 'pg';", 'src/resources/example.ts'),
    ).toEqual([
      match.stringContaining('pg is imported only in src/db/ (STYLE §1).'),
    ]);
    expect(
      await restrictions(
        "import { Parser } from 'pg-protocol/dist/parser.js';",
        'src/protocol/example.ts',
      ),
    ).toEqual([
      match.stringContaining(
        'pg-protocol is imported only in src/db/ (STYLE §1).',
      ),
    ]);
    expect(
      await restrictions(
        "import { jwtVerify } from 'jose';",
        'src/db/example.ts',
      ),
    ).toEqual([
      match.stringContaining('jose is imported only in src/auth/ (STYLE §1).'),
    ]);
    expect(
      await restrictions("import { readFile } from 'fs';", 'src/db/example.ts'),
    ).toEqual([match.stringContaining('Import node:fs (STYLE §6).')]);
    expect(
      await restrictions("import pg from 'pg';", 'src/cli/example.ts'),
    ).toEqual([
      match.stringContaining('pg is imported only in src/db/ (STYLE §1).'),
    ]);
    expect(
      await restrictions("import pg from 'pg';", 'src/db/example.ts'),
    ).toEqual([]);
    expect(
      await restrictions(
        "import createSubscriber from 'pg-listen';",
        'src/notifications/example.ts',
      ),
    ).toEqual([]);
  });

  it('lets tests and benchmarks import drivers to set up their fixtures', async () => {
    expect(
      await restrictions("import pg from 'pg';", 'test/db/example.test.ts'),
    ).toEqual([]);
    expect(
      await restrictions("import pg from 'pg';", 'bench/example.ts'),
    ).toEqual([]);
  });

  it("keeps the pool, statements and SQL text in src/db/ and the features' statements/ folders", async () => {
    const code = "await db.pool.query('select 1');";
    expect(await restrictions(code, 'src/resources/example.ts')).toEqual([
      "Statements run only in src/db/ and statements/ folders: add a function to the feature's statements/ and call it.",
      'The pool is used only in src/db/ and statements/ folders: call a db/ function (runRequestQuery, …) or a statement.',
      "SQL text lives in src/db/ or the feature's statements/ folder.",
    ]);
    expect(await restrictions(code, 'src/db/example.ts')).toEqual([]);
    expect(
      await restrictions(code, 'src/resources/statements/example.ts'),
    ).toEqual([]);
    // A statements/ folder is not db/: it reaches the driver only through db/'s index.
    expect(
      await restrictions(
        "import pg from 'pg';",
        'src/resources/statements/example.ts',
      ),
    ).toEqual([
      match.stringContaining('pg is imported only in src/db/ (STYLE §1).'),
    ]);
  });
});
