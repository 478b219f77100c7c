// Logging: one line per event on stderr (stdout belongs to the stdio transport). Never secrets.

export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string, error?: unknown): void;
}

/** A logger writing `time level message` lines to `stream` (stderr by default). */
export function createLogger(
  options: { stream?: NodeJS.WritableStream; debug?: boolean } = {},
): Logger {
  const stream = options.stream ?? process.stderr;
  const write = (level: string, message: string): void => {
    stream.write(`${new Date().toISOString()} ${level} ${message}\n`);
  };
  return {
    info: (message) => write('info', message),
    warn: (message) => write('warn', message),
    error: (message, error) => {
      // The cause (with SQL text or a stack) stays in the log; clients got a generic message.
      const detail =
        error instanceof Error
          ? options.debug === true
            ? (error.stack ?? error.message)
            : describeError(error)
          : describeValue(error);
      write('error', detail === '' ? message : `${message}: ${detail}`);
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
