// Notifications about one request's own work (spec §11, §12): notifications/progress when the
// request carries a progressToken, notifications/message at or above the level its _meta names.
// The transport writes them on the request's own stream; after the response nothing more goes out.
import { ProtocolError } from '../errors.js';
import { LOG_LEVELS, type LogLevel } from './log-levels.js';
import { serializeMessage } from './raw-json.js';
import type { RequestId } from './wire.js';

export const META_LOG_LEVEL = 'io.modelcontextprotocol/logLevel';
export const META_PROGRESS_TOKEN = 'progressToken';

/** Progress notices closer together than this are dropped (spec §11: rate-limit), except the last. */
const PROGRESS_INTERVAL_MS = 100;

/** What the transport offers: write one serialized notification on this request's stream. */
export type NoticeSink = (message: string) => void;

/** The optional `_meta` keys that opt a request in, checked (-32602 when malformed, spec §12). */
export function readNoticeOptions(meta: Record<string, unknown>): {
  token: RequestId | undefined;
  level: LogLevel | undefined;
} {
  const token = meta[META_PROGRESS_TOKEN];
  if (
    token !== undefined &&
    typeof token !== 'string' &&
    !Number.isSafeInteger(token)
  )
    throw new ProtocolError(
      'INVALID_PARAMS',
      'Invalid params: _meta.progressToken must be a string or an integer.',
    );
  const level = meta[META_LOG_LEVEL];
  if (level !== undefined && !LOG_LEVELS.includes(level as LogLevel))
    throw new ProtocolError(
      'INVALID_PARAMS',
      `Invalid params: _meta["${META_LOG_LEVEL}"] must be one of ${LOG_LEVELS.join(', ')}.`,
    );
  return {
    token: token as RequestId | undefined,
    level: level as LogLevel | undefined,
  };
}

/**
 * One request's notices. Progress only increases; a notice after `close()` (the response is on
 * its way) or without a sink (a transport that cannot interleave) is dropped.
 */
export class RequestNotices {
  #sink: NoticeSink | undefined;
  #lastProgress = -Infinity;
  #lastSentAt = -Infinity;

  constructor(
    readonly token: RequestId | undefined,
    readonly level: LogLevel | undefined,
    sink: NoticeSink | undefined,
  ) {
    this.#sink = sink;
  }

  /** Whether progress notices would go out (a token and a stream to carry them). */
  get wantsProgress(): boolean {
    return this.token !== undefined && this.#sink !== undefined;
  }

  /** Whether a message at `level` would go out. */
  wantsLog(level: LogLevel): boolean {
    return (
      this.level !== undefined &&
      this.#sink !== undefined &&
      LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(this.level)
    );
  }

  /** notifications/progress; `total` when known. The final notice (progress = total) always goes. */
  progress(progress: number, total?: number, message?: string): void {
    const sink = this.#sink;
    if (sink === undefined || this.token === undefined) return;
    if (!(progress > this.#lastProgress)) return;
    const now = performance.now();
    const final = total !== undefined && progress >= total;
    if (!final && now - this.#lastSentAt < PROGRESS_INTERVAL_MS) return;
    this.#lastProgress = progress;
    this.#lastSentAt = now;
    sink(
      serializeMessage({
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: {
          progressToken: this.token,
          progress,
          ...(total === undefined ? {} : { total }),
          ...(message === undefined ? {} : { message }),
        },
      }),
    );
  }

  /** notifications/message about this request's work; `data` must already be free of secrets. */
  log(level: LogLevel, logger: string, data: Record<string, unknown>): void {
    const sink = this.#sink;
    if (sink === undefined || !this.wantsLog(level)) return;
    sink(
      serializeMessage({
        jsonrpc: '2.0',
        method: 'notifications/message',
        params: { level, logger, data },
      }),
    );
  }

  /** The response is being written: nothing more for this request. */
  close(): void {
    this.#sink = undefined;
  }
}
