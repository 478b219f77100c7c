// db/connection/schema.ts against the migrated database: every table and column the Kysely types name
// exists, with a typed select type that fits what node-pg returns for it, NULL included.
// The test describes the database's columns as a TypeScript type and lets the compiler compare.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { testDatabaseUrl } from '../setup/harness.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Column {
  table: string;
  column: string;
  type: string;
  nullable: boolean;
}

// What node-pg's default parsers return for each type (pgmcp installs no parsers of its own).
const VALUE_TYPES: Record<string, string> = {
  bigint: 'string',
  integer: 'number',
  smallint: 'number',
  'double precision': 'number',
  real: 'number',
  numeric: 'string',
  boolean: 'boolean',
  text: 'string',
  name: 'string',
  'character varying': 'string',
  uuid: 'string',
  xid8: 'string',
  'text[]': 'string[]',
  'name[]': 'string[]',
  'bigint[]': 'string[]',
  bytea: 'Buffer',
  'timestamp with time zone': 'Date',
  'timestamp without time zone': 'Date',
  json: 'unknown',
  jsonb: 'unknown',
};

function valueType({ type, nullable }: Column): string {
  const value = VALUE_TYPES[type];
  // An unmapped type fits no typed column, so a column typed in schema.ts must be mapped above.
  if (value === undefined) return `{ readonly unmappedType: '${type}' }`;
  if (value === 'unknown') return nullable ? 'unknown' : '{}';
  return nullable ? `${value} | null` : value;
}

/** A module that compiles only when schema.ts's tables fit `columns`; tsc names each misfit. */
function checkModule(columns: readonly Column[]): string {
  const tables = new Map<string, Column[]>();
  for (const column of columns)
    tables.set(column.table, [...(tables.get(column.table) ?? []), column]);
  const migrated = [...tables]
    .map(
      ([table, members]) =>
        `  '${table}': {\n${members
          .map((column) => `    '${column.column}': ${valueType(column)};`)
          .join('\n')}\n  };`,
    )
    .join('\n');
  return `import type { Selectable } from 'kysely';
import type { Database } from '${path.join(ROOT, 'src/db/connection/schema.js')}';

interface Migrated {
${migrated}
}
type Typed<T extends keyof Database> = Selectable<Database[T]>;
// The typed select type allows only values the column can return (a text column may be typed as
// the union of the values its check allows), and allows NULL exactly when the column does.
type Fits<TS, DB> = [TS] extends [DB]
  ? [null] extends [TS] ? ([null] extends [DB] ? true : false) : [null] extends [DB] ? false : true
  : false;
type Misfits = {
  [T in keyof Database]: T extends keyof Migrated
    ? {
        [C in keyof Typed<T>]: C extends keyof Migrated[T]
          ? Fits<Typed<T>[C], Migrated[T][C]> extends true ? never : \`\${T}.\${C & string}: type or nullability differs\`
          : \`\${T}.\${C & string}: no such column\`;
      }[keyof Typed<T>]
    : \`\${T}: no such table\`;
}[keyof Database];
// tsc names every misfit as a property this object lacks.
export const misfits: Record<Misfits, true> = {};
`;
}

/** tsc's diagnostics for each file, keyed by file name (empty when it compiles). */
function typecheck(
  files: Record<string, string>,
): Promise<Map<string, string>> {
  const cache = path.join(ROOT, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  const directory = mkdtempSync(path.join(cache, 'pgmcp-schema-types-'));
  for (const [name, text] of Object.entries(files))
    writeFileSync(path.join(directory, name), text);
  writeFileSync(
    path.join(directory, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        noEmit: true,
        strict: true,
        target: 'es2023',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        types: ['node'],
        skipLibCheck: true,
        noErrorTruncation: true,
      },
      files: Object.keys(files),
    }),
  );
  const tsc = path.join(ROOT, 'node_modules', '.bin', 'tsc');
  return new Promise((resolve, reject) => {
    execFile(
      tsc,
      ['-p', directory, '--pretty', 'false'],
      { cwd: directory },
      (error, stdout, stderr) => {
        rmSync(directory, { recursive: true, force: true });
        const output = new Map(Object.keys(files).map((name) => [name, '']));
        for (const line of stdout.split('\n')) {
          const name = Object.keys(files).find((file) =>
            line.startsWith(`${file}(`),
          );
          if (name !== undefined)
            output.set(name, `${output.get(name)}${line}\n`);
        }
        // tsc exits non-zero when it reports errors in the files; other output means it did not run.
        const reported = [...output.values()].some((text) => text !== '');
        if (error !== null && !reported) {
          reject(new Error(`tsc failed: ${error.message}\n${stdout}${stderr}`));
          return;
        }
        resolve(output);
      },
    );
  });
}

// Columns the catalog calls nullable that a check constraint keeps from being NULL, each with
// that constraint; the test relies on the constraint only while it exists.
const NOT_NULL_BY_CHECK = [
  {
    table: 'pgmcp.resources',
    column: 'size', // generated from text or blob, and exactly one of them is set
    constraint: 'resources_exactly_one_of_text_or_blob',
  },
];

let columns: Column[];

beforeAll(async () => {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  try {
    const { rows } = await client.query<Column>(
      `select format('%s.%s', n.nspname, c.relname) as table, a.attname as column,
              format_type(a.atttypid, a.atttypmod) as type, not a.attnotnull as nullable
         from pg_attribute a
         join pg_class c on c.oid = a.attrelid
         join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'pgmcp' and c.relkind in ('r', 'p')
          and a.attnum > 0 and not a.attisdropped
        order by 1, a.attnum`,
    );
    const { rows: checks } = await client.query<{ name: string }>(
      `select conname as name from pg_constraint
        where connamespace = 'pgmcp'::regnamespace and contype = 'c'`,
    );
    columns = rows.map((column) =>
      NOT_NULL_BY_CHECK.some(
        (check) =>
          check.table === column.table &&
          check.column === column.column &&
          checks.some(({ name }) => name === check.constraint),
      )
        ? { ...column, nullable: false }
        : column,
    );
  } finally {
    await client.end();
  }
});

describe('db/connection/schema.ts', () => {
  it('names only tables and columns the migrations create, with the types and nullability node-pg returns', async () => {
    // The same check against a database that differs in four ways must report exactly those.
    const altered = columns.map((column): Column => {
      if (column.table === 'pgmcp.prompts' && column.column === 'messages')
        return { ...column, nullable: true };
      if (column.table !== 'pgmcp.resources') return column;
      if (column.column === 'uri') return { ...column, column: 'url' };
      if (column.column === 'priority') return { ...column, type: 'text' };
      if (column.column === 'name') return { ...column, nullable: true };
      return column;
    });
    const diagnostics = await typecheck({
      'migrated.ts': checkModule(columns),
      'altered.ts': checkModule(altered),
    });
    expect(diagnostics.get('migrated.ts')).toBe('');
    const reported = diagnostics.get('altered.ts') ?? '';
    for (const misfit of [
      'pgmcp.resources.uri: no such column',
      'pgmcp.resources.priority: type or nullability differs',
      'pgmcp.resources.name: type or nullability differs',
      'pgmcp.prompts.messages: type or nullability differs',
    ])
      expect(reported).toContain(misfit);
    expect(reported.match(/pgmcp\.[a-z_.]+: /g)).toHaveLength(4);
  });
});
