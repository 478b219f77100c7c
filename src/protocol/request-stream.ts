// A request answered on its own stream (spec §11, §14): notifications for this request (progress)
// first, then the final response, which ends the stream. HTTP carries it as one SSE response.
import { JSONRPC } from '../errors.js';
import { serializeMessage } from './raw-json.js';
import { StreamingResult, type StreamSink } from './stream.js';
import {
  META_SERVER_INFO,
  type Implementation,
  type RequestId,
} from './wire.js';

/** What the work gets: a way to send a notification now, and whether the client went away. */
export interface RequestStreamControl {
  readonly notify: (method: string, params: Record<string, unknown>) => void;
  readonly signal: AbortSignal;
}

/**
 * Answer request `id` as a stream: `work` runs once the transport attaches, may notify, and its
 * result (a complete result without resultType and _meta, added here) is the final message. An
 * error from `work` ends the stream with an internal error response, never a stack.
 */
export function streamedResponse(
  id: RequestId,
  serverInfo: Implementation,
  work: (control: RequestStreamControl) => Promise<Record<string, unknown>>,
): StreamingResult {
  const abort = new AbortController();
  return new StreamingResult({
    attach(sink: StreamSink) {
      const control: RequestStreamControl = {
        notify: (method, params) => {
          if (!abort.signal.aborted)
            sink.write(serializeMessage({ jsonrpc: '2.0', method, params }));
        },
        signal: abort.signal,
      };
      work(control).then(
        (result) => {
          if (abort.signal.aborted) return;
          sink.end(
            serializeMessage({
              jsonrpc: '2.0',
              id,
              result: {
                resultType: 'complete',
                ...result,
                _meta: { [META_SERVER_INFO]: serverInfo },
              },
            }),
          );
        },
        () => {
          if (abort.signal.aborted) return;
          sink.end(
            serializeMessage({
              jsonrpc: '2.0',
              id,
              error: {
                code: JSONRPC.INTERNAL_ERROR,
                message: 'Internal error.',
              },
            }),
          );
        },
      );
    },
    cancel() {
      abort.abort();
    },
  });
}
