// The names a statement or function body uses, read with PostgreSQL's own parser (libpg-query):
// functions, relations and types, which the guard then resolves through the catalog.
import { loadModule, parseSync, scanSync } from 'libpg-query';

/** A name as written: its schema ('' when unqualified) and the name, as PostgreSQL folds it. */
export interface WrittenName {
  readonly schema: string;
  readonly name: string;
}

/** The names one text uses. */
export interface UsedNames {
  readonly functions: WrittenName[];
  readonly relations: WrittenName[];
  readonly types: WrittenName[];
  readonly operators: WrittenName[];
  /** The text runs SQL built at run time (PL/pgSQL EXECUTE, SQL EXECUTE of a prepared statement). */
  dynamic: boolean;
}

/** Why a statement is not one the guard can vouch for (the caller's error). */
export class StatementShapeError extends Error {}

let loaded: Promise<void> | undefined;

/** Load the parser (WebAssembly) once; every other function here needs it loaded. */
export function loadParser(): Promise<void> {
  loaded ??= loadModule();
  return loaded;
}

function emptyNames(): UsedNames {
  return {
    functions: [],
    relations: [],
    types: [],
    operators: [],
    dynamic: false,
  };
}

/**
 * The names the caller's statement uses. It must be exactly one SELECT, VALUES, TABLE or WITH …
 * SELECT without INTO; anything else throws StatementShapeError.
 */
export function statementNames(sql: string): UsedNames {
  let parsed;
  try {
    parsed = parseSync(sql);
  } catch (error) {
    throw new StatementShapeError(
      `the statement does not parse: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  const statements = parsed.stmts ?? [];
  if (statements.length !== 1)
    throw new StatementShapeError(
      `the statement must be exactly one SELECT, VALUES, TABLE or WITH … SELECT (found ${statements.length} statements)`,
    );
  const root = statements[0]?.stmt as Record<string, unknown> | undefined;
  const select = root?.['SelectStmt'] as Record<string, unknown> | undefined;
  if (select === undefined)
    throw new StatementShapeError(
      `the statement must be one SELECT, VALUES, TABLE or WITH … SELECT, not ${Object.keys(root ?? {})[0] ?? 'nothing'}`,
    );
  if (select['intoClause'] !== undefined)
    throw new StatementShapeError(
      'the statement creates a table (SELECT … INTO)',
    );
  const names = emptyNames();
  walk(root, names);
  return names;
}

/**
 * The names a function body uses: an SQL body through the parser (several statements allowed);
 * a PL/pgSQL body, or an SQL body the parser refuses, through the scanner, conservatively (every
 * identifier may name a relation or type, every identifier before "(" a function).
 */
export function bodyNames(language: string, source: string): UsedNames {
  if (language === 'sql')
    try {
      const names = emptyNames();
      walk(parseSync(source), names);
      return names;
    } catch {
      // Scanned below.
    }
  return scannedNames(source);
}

/** Walk every node and array of the parse tree (new node types included), collecting names. */
function walk(node: unknown, names: UsedNames): void {
  if (Array.isArray(node)) {
    for (const item of node) walk(item, names);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
    const fields = value as Record<string, unknown>;
    switch (key) {
      case 'FuncCall':
        add(names.functions, strings(fields['funcname']));
        break;
      case 'RangeVar':
        names.relations.push({
          schema:
            typeof fields['schemaname'] === 'string'
              ? fields['schemaname']
              : '',
          name: typeof fields['relname'] === 'string' ? fields['relname'] : '',
        });
        break;
      case 'TypeName':
      case 'typeName':
        add(names.types, strings(fields['names']));
        break;
      case 'A_Expr':
        add(names.operators, strings(fields['name']));
        break;
      case 'ColumnRef':
        // x.f is f(x) when x is a row (functional notation).
        addLast(names.functions, strings(fields['fields']));
        break;
      case 'A_Indirection':
        addLast(names.functions, strings(fields['indirection']));
        break;
      case 'ExecuteStmt':
        names.dynamic = true;
        break;
    }
    walk(value, names);
  }
}

/** The String nodes' values of a name list, in order. */
function strings(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return list.flatMap((item) => {
    const sval = (item as { String?: { sval?: unknown } }).String?.sval;
    return typeof sval === 'string' ? [sval] : [];
  });
}

function add(into: WrittenName[], parts: string[]): void {
  const name = parts.at(-1);
  if (name === undefined) return;
  into.push({ schema: parts.length > 1 ? (parts.at(-2) ?? '') : '', name });
}

function addLast(into: WrittenName[], parts: string[]): void {
  for (const part of parts) into.push({ schema: '', name: part });
}

/** Token kinds the scanner reports for names: identifiers and non-reserved keywords. */
function nameOf(token: {
  text: string;
  tokenName: string;
  keywordKind: number;
}): string | undefined {
  if (token.tokenName === 'IDENT')
    return token.text.startsWith('"')
      ? token.text.slice(1, -1).replace(/""/g, '"')
      : token.text.toLowerCase();
  // 1 unreserved, 2 column-name, 3 type/function-name keywords: usable as names.
  if (token.keywordKind >= 1 && token.keywordKind <= 3)
    return token.text.toLowerCase();
  return undefined;
}

function scannedNames(source: string): UsedNames {
  const names = emptyNames();
  let tokens;
  try {
    tokens = scanSync(source).tokens;
  } catch (error) {
    throw new StatementShapeError(
      `a function body could not be read: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  tokens.forEach((token, index) => {
    if (/^[~!@#^&|`?+\-*/%<>=]+$/.test(token.text))
      names.operators.push({ schema: '', name: token.text });
    const name = nameOf(token);
    if (name === undefined) return;
    if (name === 'execute') names.dynamic = true;
    const before = tokens[index - 1];
    const qualifier =
      before?.text === '.' ? nameOf(tokens[index - 2] ?? before) : undefined;
    const written = { schema: qualifier ?? '', name };
    names.relations.push(written);
    names.types.push(written);
    if (tokens[index + 1]?.text === '(') names.functions.push(written);
    // A qualified name also counts unqualified: the qualifier may be a record variable.
    if (qualifier !== undefined) {
      names.relations.push({ schema: '', name });
      names.functions.push({ schema: '', name });
    }
  });
  return names;
}
