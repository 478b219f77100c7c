// Logging: one line per event on stderr (stdout belongs to the stdio transport). Never secrets.
// Text lines by default; with PGMCP_LOG_FORMAT=json, one JSON object per line.

/** What ties a line to a request: its JSON-RPC id and the W3C trace context it came with. */
export interface LogFields {
  readonly requestId?: string | number | undefined;
  readonly traceparent?: string | undefined;
}

/** One access-log line (issue 35): what was asked and how it went; never tokens, URIs or values. */
export interface AccessFields {
  readonly method: string;
  readonly era: string;
  readonly outcome: 'ok' | 'error';
  readonly errorType?: string;
  readonly durationMs: number;
  readonly role: string;
  readonly requestId: string | number | null;
  readonly traceId: string | null;
}

export interface Logger {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, error?: unknown, fields?: LogFields): void;
  /** One line per request; present only in JSON mode (a text log stays one line per event). */
  access?(fields: AccessFields): void;
}

export type LogFormat = 'text' | 'json';

/** PGMCP_LOG_FORMAT, checked: a typo fails at start-up rather than logging in a shape nobody parses. */
export function logFormatSetting(value: string | undefined): LogFormat {
  if (value === undefined || value === '' || value === 'text') return 'text';
  if (value === 'json') return 'json';
  throw new Error(`PGMCP_LOG_FORMAT is "${value}"; it must be text or json`);
}

/** A logger writing `time level message` lines (or JSON objects) to `stream` (stderr by default). */
export function createLogger(
  options: {
    stream?: NodeJS.WritableStream;
    debug?: boolean;
    format?: LogFormat;
  } = {},
): Logger {
  const stream = options.stream ?? process.stderr;
  const json = options.format === 'json';
  const write = (level: string, message: string, fields?: LogFields): void => {
    const time = new Date().toISOString();
    if (json) {
      stream.write(
        `${JSON.stringify({
          time,
          level,
          msg: message,
          ...(fields?.requestId === undefined
            ? {}
            : { requestId: fields.requestId }),
          ...(fields?.traceparent === undefined
            ? {}
            : { traceparent: fields.traceparent }),
        })}\n`,
      );
      return;
    }
    const tag =
      fields?.requestId === undefined
        ? ''
        : ` [${JSON.stringify(fields.requestId)}]`;
    stream.write(`${time} ${level}${tag} ${message}\n`);
  };
  return {
    ...(json
      ? {
          access: (fields: AccessFields) =>
            stream.write(
              `${JSON.stringify({ time: new Date().toISOString(), level: 'info', msg: 'access', ...fields })}\n`,
            ),
        }
      : {}),
    info: (message, fields) => write('info', message, fields),
    warn: (message, fields) => write('warn', message, fields),
    error: (message, error, fields) => {
      // The cause (with SQL text or a stack) stays in the log; clients got a generic message.
      const detail =
        error instanceof Error
          ? options.debug === true
            ? (error.stack ?? error.message)
            : describeError(error)
          : describeValue(error);
      write('error', detail === '' ? message : `${message}: ${detail}`, fields);
    },
  };
}

/** A thrown non-Error, as String() gives it: an object's fields are not spelled out (they may hold secrets). */
function describeValue(value: unknown): string {
  if (value === undefined) return '';
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- "[object Object]" on purpose: see above
  return String(value);
}

function describeError(error: Error): string {
  const parts = [error.message];
  let cause: unknown = error.cause;
  while (cause instanceof Error && parts.length < 4) {
    const code = (cause as { code?: unknown }).code;
    parts.push(
      typeof code === 'string' ? `${cause.message} [${code}]` : cause.message,
    );
    cause = cause.cause;
  }
  return parts.join(' <- ');
}
