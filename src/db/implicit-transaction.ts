// Two or more parameterized statements in one round trip and one transaction, without BEGIN or
// COMMIT: each statement's extended-query messages, then a single Sync. PostgreSQL runs everything
// before a Sync as one implicit transaction, so `set_config(…, true)` in the first statement holds
// for the next ones and ends with the transaction. Submitted through pg's Submittable interface,
// the one pg-cursor and pg-query-stream use.
import pg from 'pg';

/** One statement; a named one is prepared once per connection. */
export interface ImplicitStatement {
  readonly name: string;
  readonly text: string;
  readonly values: readonly unknown[];
  /** Rows are the driver's arrays of each column's Postgres text output, not parsed objects. */
  readonly textOutput?: boolean | undefined;
}

type Row = Record<string, unknown> | readonly (string | null)[];

interface Field {
  readonly name: string;
  readonly dataTypeID: number;
}

// The parts of pg's Connection a Submittable drives (not in @types/pg).
interface WireConnection {
  parsedStatements: Record<string, string>;
  stream: { cork?: () => void; uncork?: () => void };
  parse(message: { text: string; name: string; types: number[] }): void;
  bind(message: {
    statement: string;
    portal: string;
    values: unknown[];
    valueMapper: (value: unknown) => unknown;
  }): void;
  describe(message: { type: 'P'; name: string }): void;
  execute(message: { portal: string; rows: number }): void;
  sync(): void;
}

function wireValue(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string' || Buffer.isBuffer(value)) return value;
  if (
    typeof value === 'number' ||
    typeof value === 'bigint' ||
    typeof value === 'boolean'
  )
    return String(value);
  if (Array.isArray(value)) return arrayLiteral(value);
  return JSON.stringify(value);
}

/** A one-dimensional Postgres array literal: {"a","b",NULL}, elements quoted and escaped. */
function arrayLiteral(values: readonly unknown[]): string {
  const elements = values.map((element) => {
    if (element === null || element === undefined) return 'NULL';
    if (Array.isArray(element)) return arrayLiteral(element);
    const text = wireValue(element) as string;
    return `"${text.replace(/[\\"]/g, '\\$&')}"`;
  });
  return `{${elements.join(',')}}`;
}

const keepText = (value: string): string => value;

/**
 * Runs `statements` as one implicit transaction. `result` resolves with each statement's rows or
 * rejects with the first error. After an error the backend skips the rest up to the Sync and the
 * connection stays usable, unless `unsafeToReuse` says a new prepared statement may be half-made.
 */
export class ImplicitTransaction {
  readonly result: Promise<Row[][]>;
  unsafeToReuse = false;
  #resolve: (rows: Row[][]) => void = () => undefined;
  #reject: (error: unknown) => void = () => undefined;
  readonly #rows: Row[][];
  #fields: readonly Field[] = [];
  #parsers: ((value: string) => unknown)[] = [];
  #textRows = false;
  #current = 0;
  #settled = false;
  #parsing: string[] = [];
  #connection: WireConnection | undefined;

  constructor(readonly statements: readonly ImplicitStatement[]) {
    this.#rows = statements.map(() => []);
    this.#textRows = statements[0]?.textOutput === true;
    this.result = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  /** Called by pg when this becomes the connection's active query. */
  submit(connection: WireConnection): void {
    this.#connection = connection;
    connection.stream.cork?.();
    try {
      for (const statement of this.statements) {
        if (
          connection.parsedStatements[statement.name] === undefined &&
          !this.#parsing.includes(statement.name)
        ) {
          connection.parse({
            text: statement.text,
            name: statement.name,
            types: [],
          });
          this.#parsing.push(statement.name);
        }
        connection.bind({
          statement: statement.name,
          portal: '',
          values: [...statement.values],
          valueMapper: wireValue,
        });
        // Text rows need no field list (a DataRow carries its own column count): no Describe, so
        // the backend sends no RowDescription and the driver parses none.
        if (statement.textOutput !== true)
          connection.describe({ type: 'P', name: '' });
        connection.execute({ portal: '', rows: 0 });
      }
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
  }

  handleRowDescription(message: { fields: readonly Field[] }): void {
    this.#fields = message.fields;
    this.#parsers = this.#textRows
      ? []
      : message.fields.map(
          (field) =>
            pg.types.getTypeParser(field.dataTypeID, 'text') as (
              value: string,
            ) => unknown,
        );
  }

  handleDataRow(message: { fields: readonly (string | null)[] }): void {
    if (this.#textRows) {
      // pg-protocol makes a new array per DataRow message: it is the row.
      this.#rows[this.#current]?.push(message.fields);
      return;
    }
    const row: Record<string, unknown> = {};
    for (let index = 0; index < this.#fields.length; index += 1) {
      const value = message.fields[index];
      const parse = this.#parsers[index] ?? keepText;
      row[this.#fields[index]?.name ?? String(index)] =
        value === null || value === undefined ? null : parse(value);
    }
    this.#rows[this.#current]?.push(row);
  }

  handleCommandComplete(): void {
    this.#advance();
  }

  handleEmptyQuery(): void {
    this.#advance();
  }

  #advance(): void {
    this.#current += 1;
    this.#fields = [];
    this.#textRows = this.statements[this.#current]?.textOutput === true;
  }

  handlePortalSuspended(): void {
    // execute() asks for every row (rows: 0): the portal never suspends.
  }

  /** pg calls this for an ErrorResponse and then forgets this query, so settle now. */
  handleError(error: unknown): void {
    // Which of this transaction's Parse messages took effect is unknown after an error.
    if (this.#parsing.length > 0) this.unsafeToReuse = true;
    if (this.#settled) return;
    this.#settled = true;
    this.#reject(error);
  }

  handleReadyForQuery(): void {
    if (this.#settled) return;
    this.#settled = true;
    const connection = this.#connection;
    for (const name of this.#parsing) {
      const statement = this.statements.find(
        (candidate) => candidate.name === name,
      );
      if (connection !== undefined && statement !== undefined)
        connection.parsedStatements[name] = statement.text;
    }
    this.#resolve(this.#rows);
  }

  handleCopyInResponse(): void {
    this.handleError(
      new Error('COPY is not supported in a request transaction'),
    );
  }

  handleCopyData(): void {
    // never requested
  }
}
