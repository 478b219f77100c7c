// Feature detection for the driver internals (README.md beside this file): at start-up, check that
// the private members of pg and pg-protocol the internals drive exist and behave, without a
// connection. A pg whose shape differs (a patch release that renamed one) is not refused: the
// caller logs the problem once and sends every request through pg's public API instead.
import { createRequire } from 'node:module';
import pg from 'pg';

/** The parts of a pg installation the internals drive; a test hands in another shape. */
export interface DriverShape {
  /** pg's Connection class (pg.Connection). */
  readonly Connection: unknown;
  /** pg's Query class (pg.Query): its prototype names the calls pg makes on a Submittable. */
  readonly Query: unknown;
  /** pg's lib/utils.js prepareValue: the value serialisation pg's own Query binds with. */
  readonly prepareValue: unknown;
  /** The Parser class of the pg-protocol pg itself resolves. */
  readonly Parser: unknown;
}

const require = createRequire(import.meta.url);

/**
 * The pg this process loads. Never throws: a module a later pg no longer has leaves its member
 * undefined, which the probe then names.
 */
export function installedDriver(): DriverShape {
  return {
    Connection: pg.Connection,
    Query: pg.Query,
    prepareValue: member(
      () => require('pg/lib/utils.js') as { prepareValue?: unknown },
      'prepareValue',
    ),
    // pg-protocol as pg resolves it (a nested copy, if any, is the one pg parses with).
    Parser: member(
      () =>
        createRequire(require.resolve('pg'))('pg-protocol/dist/parser.js') as {
          Parser?: unknown;
        },
      'Parser',
    ),
  };
}

/** `name` of the module `load` returns, or undefined when it cannot be loaded. */
function member<TName extends string>(
  load: () => Partial<Record<TName, unknown>>,
  name: TName,
): unknown {
  try {
    return load()[name];
  } catch {
    return undefined;
  }
}

/** The calls pg makes on its active query (client.js), which ImplicitTransaction answers. */
const QUERY_CALLS = [
  'submit',
  'handleRowDescription',
  'handleDataRow',
  'handleCommandComplete',
  'handleEmptyQuery',
  'handleError',
  'handleReadyForQuery',
  'handlePortalSuspended',
  'handleCopyInResponse',
  'handleCopyData',
] as const;

/** Why the internals cannot drive `shape`, or undefined when they can. Never throws. */
export function driverInternalsProblem(
  shape: DriverShape = installedDriver(),
): string | undefined {
  try {
    return (
      prepareValueProblem(shape.prepareValue) ??
      queryProblem(shape.Query) ??
      connectionProblem(shape) ??
      parserProblem(shape.Parser)
    );
  } catch (error) {
    return `probing pg failed: ${error instanceof Error ? error.message : String(error)}`;
  }
}

function prepareValueProblem(prepareValue: unknown): string | undefined {
  if (typeof prepareValue !== 'function')
    return "pg's lib/utils.js has no prepareValue function";
  const prepare = prepareValue as (value: unknown) => unknown;
  if (prepare(['a', null]) !== '{"a",NULL}' || prepare(true) !== 'true')
    return "pg's prepareValue no longer serialises arrays and booleans as PostgreSQL text";
  return undefined;
}

function queryProblem(Query: unknown): string | undefined {
  const prototype = ((Query as { prototype?: unknown } | undefined)
    ?.prototype ?? {}) as Record<string, unknown>;
  const missing = QUERY_CALLS.filter(
    (name) => typeof prototype[name] !== 'function',
  );
  return missing.length === 0
    ? undefined
    : `pg's Query has no ${missing.join(', ')} method`;
}

/** A stand-in socket that keeps what is written: the Connection never touches the network. */
function recordingStream(): {
  writable: boolean;
  written: Buffer[];
  write(buffer: Buffer): boolean;
  cork(): void;
  uncork(): void;
} {
  const written: Buffer[] = [];
  return {
    writable: true,
    written,
    write: (buffer) => written.push(buffer) > 0,
    cork: () => undefined,
    uncork: () => undefined,
  };
}

/**
 * pg's Connection keeps a parsedStatements table and writes Parse, Bind (its values through the
 * valueMapper), Describe, Execute and Sync: the message types, in order, on the stream it is given.
 */
function connectionProblem(shape: DriverShape): string | undefined {
  const Connection = shape.Connection as
    (new (config: { stream: unknown }) => Record<string, unknown>) | undefined;
  const prototype = ((Connection as { prototype?: unknown } | undefined)
    ?.prototype ?? {}) as Record<string, unknown>;
  const methods = ['parse', 'bind', 'describe', 'execute', 'sync'] as const;
  const missing = methods.filter(
    (name) => typeof prototype[name] !== 'function',
  );
  if (Connection === undefined || missing.length > 0)
    return `pg's Connection has no ${missing.join(', ')} method`;
  const stream = recordingStream();
  const connection = new Connection({ stream }) as Record<
    string,
    (message?: unknown) => void
  > & { parsedStatements?: unknown };
  if (
    typeof connection.parsedStatements !== 'object' ||
    connection.parsedStatements === null
  )
    return "pg's Connection has no parsedStatements table";
  connection['parse']?.({ text: 'select $1', name: 'probe', types: [] });
  connection['bind']?.({
    statement: 'probe',
    portal: '',
    values: [['probe', null]],
    valueMapper: shape.prepareValue,
  });
  connection['describe']?.({ type: 'P', name: '' });
  connection['execute']?.({ portal: '', rows: 0 });
  connection['sync']?.();
  const types = stream.written
    .map((buffer) => String.fromCharCode(buffer[0] ?? 0))
    .join('');
  if (types !== 'PBDES')
    return `pg's Connection wrote messages ${JSON.stringify(types)} for Parse, Bind, Describe, Execute, Sync`;
  if (!(stream.written[1]?.includes('{"probe",NULL}') ?? false))
    return "pg's Connection.bind did not map its values through valueMapper";
  return undefined;
}

/** A DataRow message with `values` (text, or null for NULL). */
function dataRow(values: readonly (string | null)[]): Buffer {
  const parts = values.map((value) => {
    if (value === null) {
      const length = Buffer.alloc(4);
      length.writeInt32BE(-1);
      return length;
    }
    const text = Buffer.from(value);
    const length = Buffer.alloc(4);
    length.writeInt32BE(text.length);
    return Buffer.concat([length, text]);
  });
  const body = Buffer.concat([
    Buffer.from([values.length >> 8, values.length & 0xff]),
    ...parts,
  ]);
  const header = Buffer.alloc(5);
  header.write('D', 0);
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

/** pg-protocol parses each DataRow into a new array of its values (text rows keep that array). */
function parserProblem(Parser: unknown): string | undefined {
  if (typeof Parser !== 'function') return 'pg-protocol has no Parser class';
  const parser = new (
    Parser as new () => {
      parse(buffer: Buffer, callback: (message: unknown) => void): void;
    }
  )();
  const rows: unknown[] = [];
  parser.parse(Buffer.concat([dataRow(['a', null]), dataRow(['b'])]), (m) =>
    rows.push((m as { fields?: unknown }).fields),
  );
  const [first, second] = rows;
  if (
    !Array.isArray(first) ||
    !Array.isArray(second) ||
    first === second ||
    first[0] !== 'a' ||
    first[1] !== null ||
    second[0] !== 'b'
  )
    return "pg-protocol's DataRow messages no longer carry a new array of text values each";
  return undefined;
}
