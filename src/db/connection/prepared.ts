// Request statements as named prepared statements, and the compile-only Kysely instance that
// builds those it can express, once, at module load: typed SQL with no per-request builder cost.
import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type Compilable,
  type InferResult,
} from 'kysely';
import type { Database } from './schema.js';

/** A compiled, parameterized statement; `TArgs` names its inputs, `TRow` is the row it returns. */
export interface PreparedQuery<TArgs, TRow> {
  readonly name: string;
  readonly text: string;
  /** Positional parameter values for `args`, in the order the compiled SQL numbers them. */
  values(args: TArgs): unknown[];
  /**
   * Return each row as the array of its columns' Postgres text output (null for NULL), in select
   * order, instead of an object of parsed JS values.
   */
  readonly textOutput?: boolean;
  /**
   * Runs on a pipelined connection (db/driver/request-pipeline.ts): only for statements on pgmcp's own
   * tables, short by construction, since a statement behind it waits and no cancel reaches it.
   */
  readonly pipelined?: boolean;
  /**
   * Runs on the primary even when the database has standbys (db/standby/): what it reads must come
   * from one server, the one it is written on.
   */
  readonly onPrimary?: boolean;
  /** Phantom field carrying the row type; never set. */
  readonly row?: TRow;
}

/** A Kysely instance typed by db/connection/schema.ts that only compiles statements: it never connects. */
export const builder = new Kysely<Database>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

// Stands in for a named input while Kysely compiles a statement: Kysely copies values into the
// compiled parameter list unchanged, so each parameter's position shows which input it binds.
class Argument {
  constructor(readonly name: string) {}

  // Pasted into text (a JS template literal instead of Kysely's sql tag) it would not be bound.
  toString(): string {
    throw new Error(`input ${this.name} is pasted into SQL text, not bound`);
  }
}

const ARGUMENTS = new Proxy(
  {},
  {
    get: (_target, key) =>
      typeof key === 'string' ? new Argument(key) : undefined,
  },
);

/**
 * A statement built with Kysely and compiled once, at module load. `build` receives its inputs
 * by name (stand-ins, not values) and must use them for every value in the query: a constant
 * would be bound as a parameter no input supplies, so it is refused here; write it with sql.lit.
 * values() then binds each of Kysely's numbered parameters from the input of that name.
 */
export function prepare<TArgs extends object, TQuery extends Compilable>(
  name: string,
  build: (args: TArgs) => TQuery,
): PreparedQuery<TArgs, InferResult<TQuery>[number]> {
  const compiled = build(ARGUMENTS as TArgs).compile();
  const inputs = compiled.parameters.map((parameter, index) => {
    if (parameter instanceof Argument) return parameter.name;
    throw new Error(
      `prepared query ${name}: parameter $${index + 1} is not one of its inputs`,
    );
  });
  return {
    name,
    text: compiled.sql,
    values: (args) =>
      inputs.map((input) => (args as Record<string, unknown>)[input]),
  };
}

/** `query`, sent on a pipelined connection (PreparedQuery.pipelined). */
export function pipelined<TArgs, TRow>(
  query: PreparedQuery<TArgs, TRow>,
): PreparedQuery<TArgs, TRow> {
  return { ...query, pipelined: true };
}
