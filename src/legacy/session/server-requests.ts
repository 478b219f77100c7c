// Requests the server sends a 2025-11-25 client in the middle of one of its requests
// (elicitation/create, sampling/createMessage; legacy digest §2, §5.3): written on that request's
// own stream, answered by a JSON-RPC response the client sends back in the same session, matched
// by id. One registry per session, so an answer can only settle a request of its own session.
import { randomUUID } from 'node:crypto';
import { ProtocolError } from '../../errors.js';
import { serializeMessage, type NoticeSink } from '../../protocol/index.js';

/** One outgoing request: where it goes, when to give up. */
export interface ServerRequest {
  readonly method: string;
  readonly params: Record<string, unknown>;
  /** The originating request's stream (HTTP: its POST's SSE answer; stdio: a line). */
  readonly sink: NoticeSink;
  /** The originating request's cancel: stops the wait. */
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
}

interface Pending {
  readonly resolve: (result: Record<string, unknown>) => void;
  readonly reject: (error: Error) => void;
}

/** The requests a session is waiting on, by the id this server gave them. */
export class ServerRequests {
  readonly #pending = new Map<string, Pending>();

  /** How many answers are awaited (tests, and a session's idle sweep). */
  get size(): number {
    return this.#pending.size;
  }

  /**
   * Send `request` and wait for its result. Rejects with TIMEOUT when no answer comes in time,
   * with INVALID_REQUEST when the client answers with an error, and when the originating request
   * is cancelled or the session ends. Never waits longer than `timeoutMs`.
   */
  send(request: ServerRequest): Promise<Record<string, unknown>> {
    const id = randomUUID();
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        request.signal.removeEventListener('abort', cancelled);
        this.#pending.delete(id);
      };
      const cancelled = () => {
        done();
        reject(new ProtocolError('INVALID_REQUEST', 'Request cancelled.'));
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new ProtocolError(
            'TIMEOUT',
            `No answer from the client to ${request.method} within ${Math.round(request.timeoutMs / 1000)} s; nothing was read.`,
          ),
        );
      }, request.timeoutMs);
      timer.unref();
      if (request.signal.aborted) {
        cancelled();
        return;
      }
      request.signal.addEventListener('abort', cancelled, { once: true });
      this.#pending.set(id, {
        resolve: (result) => {
          done();
          resolve(result);
        },
        reject: (error) => {
          done();
          reject(error);
        },
      });
      request.sink(
        serializeMessage({
          jsonrpc: '2.0',
          id,
          method: request.method,
          params: request.params,
        }),
      );
    });
  }

  /**
   * A JSON-RPC response from the client: settles the request it answers and returns true; an
   * answer to nothing awaited here (late, unknown, another replica's) returns false.
   */
  answer(value: unknown): boolean {
    const record = value as Record<string, unknown>;
    const id = record['id'];
    const pending = typeof id === 'string' ? this.#pending.get(id) : undefined;
    if (pending === undefined) return false;
    const result = record['result'];
    if (typeof result === 'object' && result !== null && !Array.isArray(result))
      pending.resolve(result as Record<string, unknown>);
    else pending.reject(clientError(record['error']));
    return true;
  }

  /** The session ended: every wait ends with an error. */
  closeAll(): void {
    for (const pending of [...this.#pending.values()])
      pending.reject(
        new ProtocolError('INVALID_REQUEST', 'The session ended.'),
      );
  }
}

function clientError(error: unknown): ProtocolError {
  const message =
    typeof error === 'object' && error !== null
      ? (error as Record<string, unknown>)['message']
      : undefined;
  return new ProtocolError(
    'INVALID_REQUEST',
    `The client answered with an error${typeof message === 'string' ? `: ${message.slice(0, 200)}` : ''}.`,
  );
}
