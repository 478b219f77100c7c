// input_required in the 2025-11-25 era (legacy digest §2, §3.3, §5.3): what 2026-07-28 answers
// as input_required becomes requests sent to the client on the request's own stream, each needing
// the capability its initialize declared.
import { ProtocolError } from '../../errors.js';
import {
  RawJson,
  type DispatchOutcome,
  type JsonRpcResponse,
  type TransportContext,
} from '../../protocol/index.js';
import {
  LEGACY_VERSIONS,
  type LegacySession,
} from '../session/legacy-session.js';

/** Most input_required answers one legacy request goes through before it must be complete. */
export const MAX_INPUT_ROUNDS = 4;
/** How long a request waits for the client's answer to a request of the server, by default. */
export const DEFAULT_INPUT_TIMEOUT_MS = 600_000;
/** The client capability each server-to-client request needs (legacy digest §3.3). */
const REQUIRED_CAPABILITY: Record<string, string> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
};

/**
 * A request answered on its own stream (a tool call with a progressToken) as one legacy answer: its
 * notifications go out through the transport's notify (the POST's SSE answer, stdio lines) as
 * they come, and its final message is the response. A cancel drops the stream and the answer.
 */
export function settle(
  outcome: DispatchOutcome,
  transport: TransportContext,
): Promise<DispatchOutcome> {
  if (outcome.kind !== 'stream') return Promise.resolve(outcome);
  const { stream } = outcome;
  return new Promise((resolve) => {
    const cancel = () => {
      stream.cancel();
      resolve({ kind: 'accepted' });
    };
    if (transport.signal.aborted) {
      cancel();
      return;
    }
    transport.signal.addEventListener('abort', cancel, { once: true });
    stream.attach({
      write: (message) => {
        transport.notify?.(message);
        return true;
      },
      pendingBytes: 0,
      onDrain: () => undefined,
      end: (finalMessage) => {
        transport.signal.removeEventListener('abort', cancel);
        resolve(
          finalMessage === undefined
            ? { kind: 'accepted' }
            : {
                kind: 'response',
                response: JSON.parse(finalMessage) as JsonRpcResponse,
                httpStatus: 200,
              },
        );
      },
    });
  });
}

/** An input_required answer's questions and state, or undefined for any other outcome. */
export function inputRequired(
  outcome: DispatchOutcome,
):
  | { inputRequests: Record<string, unknown>; requestState?: string }
  | undefined {
  if (outcome.kind !== 'response' || !('result' in outcome.response))
    return undefined;
  const { result } = outcome.response;
  if (result instanceof RawJson || result['resultType'] !== 'input_required')
    return undefined;
  const { inputRequests, requestState } = result;
  if (typeof inputRequests !== 'object' || inputRequests === null)
    throw new ProtocolError(
      'INTERNAL',
      'An input_required result has no inputRequests.',
    );
  return {
    inputRequests: inputRequests as Record<string, unknown>,
    ...(typeof requestState === 'string' ? { requestState } : {}),
  };
}

export function readInputRequest(value: unknown): {
  method: string;
  params: Record<string, unknown>;
} {
  const record =
    typeof value === 'object' && value !== null
      ? (value as Record<string, unknown>)
      : {};
  const { method, params } = record;
  if (
    typeof method !== 'string' ||
    typeof params !== 'object' ||
    params === null
  )
    throw new ProtocolError(
      'INTERNAL',
      'An input request has no method or params.',
    );
  return { method, params: params as Record<string, unknown> };
}

/**
 * The same refusal as the 2026-07-28 era (-32021 naming what is missing) when the session's
 * initialize did not declare what `method` needs; form elicitation is `elicitation: {}` or `form`.
 */
export function requireCapability(
  capabilities: Record<string, unknown>,
  method: string,
  params: Record<string, unknown>,
): void {
  const name = REQUIRED_CAPABILITY[method];
  if (name === undefined)
    throw new ProtocolError(
      'INTERNAL',
      `No client capability is known for ${method}.`,
    );
  const declared = capabilities[name];
  let required: Record<string, unknown> = { [name]: {} };
  let ok = typeof declared === 'object' && declared !== null;
  if (name === 'elicitation') {
    const mode = params['mode'] === 'url' ? 'url' : 'form';
    const modes = (declared ?? {}) as Record<string, unknown>;
    required = { elicitation: { [mode]: {} } };
    ok &&=
      mode in modes || (mode === 'form' && Object.keys(modes).length === 0);
  }
  if (!ok)
    throw new ProtocolError(
      'MISSING_CLIENT_CAPABILITY',
      `This request needs to send the client ${method}, which this session's initialize did not declare.`,
      { data: { requiredCapabilities: required } },
    );
}

/** Before 2025-11-25 an elicitation had no `mode` (form was the only one). */
export function forVersion(
  session: LegacySession,
  method: string,
  params: Record<string, unknown>,
): Record<string, unknown> {
  if (
    method !== 'elicitation/create' ||
    session.handshake?.protocolVersion === LEGACY_VERSIONS[0]
  )
    return params;
  const { mode: _mode, ...rest } = params;
  return rest;
}
