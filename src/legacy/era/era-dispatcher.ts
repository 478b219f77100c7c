// One connection, both eras (legacy digest §10.1): a Dispatcher that decides per message whether
// it is 2026-07-28 (the envelope claim) or 2025-11-25, for a transport that is its own session.
import type { Dispatcher } from '../../protocol/index.js';
import type { LegacySession } from '../session/legacy-session.js';
import type { LegacyAdapter } from './legacy-adapter.js';
import { hasModernClaim } from './legacy-codec.js';

/**
 * Wrap `modern` so that messages without the 2026-07-28 claim are served as `session`'s legacy
 * traffic. Modern messages never read or change the legacy session.
 */
export function createEraDispatcher(
  modern: Dispatcher,
  legacy: LegacyAdapter,
  session: LegacySession,
): Dispatcher {
  return {
    parse: (value) => modern.parse(value),
    fail: (error, id) =>
      session.handshake === undefined
        ? modern.fail(error, id)
        : legacy.fail(error, id),
    answer: (value) => {
      session.requests.answer(value);
    },
    inputEnded: () => session.requests.closeAll(),
    dispatch: (message, transport) =>
      hasModernClaim(message)
        ? modern.dispatch(message, transport)
        : legacy.handle(message, session, transport),
  };
}
