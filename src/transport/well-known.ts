// The documents served beside the MCP endpoint, with no guard or authentication: liveness
// (/healthz), readiness (/readyz) and RFC 9728 protected-resource metadata.
import type http from 'node:http';
import type { ServingOptions } from './http-options.js';
import { send } from './http-responses.js';

const PROTECTED_RESOURCE = '/.well-known/oauth-protected-resource';

/**
 * Answer `path` if it names one of these documents; false (nothing written) otherwise. The
 * metadata is served at the RFC 9728 root and at the root suffixed with the endpoint path.
 */
export function serveWellKnown(
  options: Pick<ServingOptions, 'path' | 'ready' | 'protectedResource'>,
  path: string,
  response: http.ServerResponse,
): boolean {
  if (path === '/healthz') {
    send(response, 200, { status: 'ok' });
    return true;
  }
  if (path === '/readyz') {
    const readiness = options.ready?.() ?? { ok: true, detail: {} };
    send(response, readiness.ok ? 200 : 503, {
      status: readiness.ok ? 'ready' : 'not ready',
      ...readiness.detail,
    });
    return true;
  }
  if (
    options.protectedResource !== undefined &&
    (path === PROTECTED_RESOURCE ||
      path === `${PROTECTED_RESOURCE}${options.path}`)
  ) {
    send(response, 200, options.protectedResource.document);
    return true;
  }
  return false;
}
