// Two or more parameterized statements in one round trip and one transaction, without BEGIN or
// COMMIT: each statement's extended-query messages, then a single Sync. PostgreSQL runs everything
// before a Sync as one implicit transaction, so `set_config(…, true)` in the first statement holds
// for the next ones and ends with the transaction. Submitted through pg's Submittable interface,
// the one pg-cursor and pg-query-stream use. What of pg it drives: README.md beside this file;
// driver/probe.ts checks it at start-up.
import pg from 'pg';
import { installedDriver } from './probe.js';

/** pg's own value serializer, looked up on first use (the start-up probe has checked it). */
let installed: ((value: unknown) => unknown) | undefined;
const prepareValue = (value: unknown): unknown =>
  (installed ??= installedDriver().prepareValue as (v: unknown) => unknown)(
    value,
  );

/**
 * One statement; a named one is prepared once per connection, the unnamed one ('') is parsed every
 * time (a caller's own SQL, which no name could be reused for).
 */
export interface ImplicitStatement {
  readonly name: string;
  readonly text: string;
  readonly values: readonly unknown[];
  /** Rows are the driver's arrays of each column's Postgres text output, not parsed objects. */
  readonly textOutput?: boolean | undefined;
}

type Row = Record<string, unknown> | readonly (string | null)[];

/** A result column as the backend's RowDescription names it. */
export interface ImplicitField {
  readonly name: string;
  readonly dataTypeID: number;
  readonly dataTypeModifier: number;
}
type Field = ImplicitField;

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

const keepText = (value: string): string => value;

/** Per connection: names whose Parse a transaction on the wire has sent and not yet seen answered. */
const parsesInFlight = new WeakMap<object, Set<string>>();

function pendingParses(connection: object): Set<string> {
  let pending = parsesInFlight.get(connection);
  if (pending === undefined) {
    pending = new Set();
    parsesInFlight.set(connection, pending);
  }
  return pending;
}

/**
 * Runs `statements` as one implicit transaction. `result` resolves with each statement's rows or
 * rejects with the first error. After an error the backend skips the rest up to the Sync and the
 * connection stays usable, unless `unsafeToReuse` says a new prepared statement may be half-made.
 */
export class ImplicitTransaction {
  readonly result: Promise<Row[][]>;
  /** Each statement's result columns, once its RowDescription came (statements not textOutput). */
  readonly fields: (readonly Field[] | undefined)[];
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

  constructor(
    readonly statements: readonly ImplicitStatement[],
    /** Parse every named statement before running any (a pipelined connection's transactions). */
    readonly parseFirst = false,
  ) {
    this.#rows = statements.map(() => []);
    this.fields = statements.map(() => undefined);
    this.#textRows = statements[0]?.textOutput === true;
    this.result = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  /**
   * Called by pg when this is sent: when it becomes the connection's active query, or at once on a
   * pipelined connection (db/request-pipeline.ts), where other transactions may be on the wire
   * before it and after it, and a name being parsed by one of them is not parsed again. There
   * (`parseFirst`) named statements are parsed before anything runs, so an error in a statement
   * never leaves a later one unparsed while another transaction relies on it. Not elsewhere: a
   * Parse takes a snapshot, after which BEGIN READ WRITE is refused.
   */
  submit(connection: WireConnection): void {
    this.#connection = connection;
    const pending = pendingParses(connection);
    // How each statement goes: bound by its name (parsed before), parsed under its name now, or
    // parsed as the unnamed statement (a caller's SQL, or a name another transaction on the wire
    // is still parsing: binding it would fail with that transaction's Parse).
    const ways = this.statements.map((statement) => {
      if (statement.name === '' || pending.has(statement.name))
        return 'unnamed';
      if (connection.parsedStatements[statement.name] !== undefined)
        return 'named';
      pending.add(statement.name);
      this.#parsing.push(statement.name);
      return 'parse';
    });
    const parse = (statement: ImplicitStatement, name: string): void =>
      connection.parse({ text: statement.text, name, types: [] });
    connection.stream.cork?.();
    try {
      if (this.parseFirst)
        this.statements.forEach((statement, index) => {
          if (ways[index] === 'parse') parse(statement, statement.name);
        });
      this.statements.forEach((statement, index) => {
        const way = ways[index];
        if (way === 'unnamed') parse(statement, '');
        else if (way === 'parse' && !this.parseFirst)
          parse(statement, statement.name);
        connection.bind({
          statement: way === 'unnamed' ? '' : statement.name,
          portal: '',
          values: [...statement.values],
          valueMapper: prepareValue,
        });
        // Text rows need no field list (a DataRow carries its own column count): no Describe, so
        // the backend sends no RowDescription and the driver parses none.
        if (statement.textOutput !== true)
          connection.describe({ type: 'P', name: '' });
        connection.execute({ portal: '', rows: 0 });
      });
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
  }

  handleRowDescription(message: { fields: readonly Field[] }): void {
    this.#fields = message.fields;
    this.fields[this.#current] = message.fields;
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

  /**
   * After an error left `unsafeToReuse`: drop every prepared statement on the server and in pg's
   * table of them, so the next use parses afresh and the connection can be kept (a cancel during a
   * statement's first run is the common case). Rejects when the connection cannot do even that.
   */
  async forgetPreparedStatements(client: {
    query(text: string): Promise<unknown>;
  }): Promise<void> {
    await client.query('deallocate all');
    const table = this.#connection?.parsedStatements;
    if (table !== undefined)
      for (const name of Object.keys(table)) delete table[name];
  }

  /** pg calls this for an ErrorResponse and then forgets this query, so settle now. */
  handleError(error: unknown): void {
    // Which of this transaction's Parse messages took effect is unknown after an error.
    if (this.#parsing.length > 0) this.unsafeToReuse = true;
    this.#settleParses(false);
    if (this.#settled) return;
    this.#settled = true;
    this.#reject(error);
    this.#callback(error);
  }

  handleReadyForQuery(): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#settleParses(true);
    this.#resolve(this.#rows);
    this.#callback(null);
  }

  /**
   * pg wraps a query's callback to clear its query_timeout timer (a DATABASE_URL may set one): left
   * uncalled, the timer would fire after the transaction ended and destroy the connection.
   */
  #callback(error: unknown): void {
    const { callback } = this as { callback?: (error: unknown) => void };
    callback?.(error);
  }

  /** This transaction's Parse messages are answered: made (recorded in pg's table) or not known. */
  #settleParses(made: boolean): void {
    const connection = this.#connection;
    if (connection === undefined) return;
    const pending = pendingParses(connection);
    for (const name of this.#parsing) {
      pending.delete(name);
      const statement = this.statements.find(
        (candidate) => candidate.name === name,
      );
      if (made && statement !== undefined)
        connection.parsedStatements[name] = statement.text;
    }
    this.#parsing = [];
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

// pg's pipeline mode accepts only Query instances (`instanceof`), so ImplicitTransaction's
// prototype chain goes through pg's Query; its constructor never runs (per request it would copy a
// config, make a Result and an EventEmitter that nothing here uses). This class defines submit()
// and every handle* call pg makes on a query, so nothing of Query's own is ever called.
Object.setPrototypeOf(ImplicitTransaction.prototype, pg.Query.prototype);

/**
 * pg's table of the statements it has prepared on `client`'s connection (name → text), which the
 * ImplicitTransaction reads and fills as pg's own Query does; empty when pg keeps none.
 */
export function parsedStatementsOf(client: object): Record<string, string> {
  return (
    (client as { connection?: { parsedStatements?: Record<string, string> } })
      .connection?.parsedStatements ?? {}
  );
}
