// The HTTP-level checks an MCP POST meets before authentication, in the order it meets them
// (spec §14.2): Host and Origin, method, content type, Accept, declared size. Each is pure.
import type http from 'node:http';
import type { Refusal } from './http-responses.js';

/** A refusal, plus the headers that explain it (Allow on a 405). */
export interface GuardRefusal extends Refusal {
  readonly headers?: Readonly<Record<string, string>>;
}

/** The options the guards read. */
export interface GuardOptions {
  readonly allowedHosts: readonly string[];
  readonly allowedOrigins: readonly string[];
  /** Issue 14: set when 2025-11-25 sessions are served (GET and DELETE are theirs, routed first). */
  readonly otherEra?: object | undefined;
}

type Guard = (
  request: http.IncomingMessage,
  options: GuardOptions,
) => GuardRefusal | undefined;

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** Host header names (port dropped) in `allowed`, or `*` there; a request without Host fails. */
export function hostAllowed(
  host: string | undefined,
  allowed: readonly string[],
): boolean {
  if (host === undefined) return false;
  if (allowed.includes('*')) return true;
  const name = host.startsWith('[')
    ? host.slice(0, host.indexOf(']') + 1)
    : (host.split(':', 1)[0] ?? '');
  return allowed.includes(name.toLowerCase());
}

/** No Origin (a non-browser client), one listed, `*`, or a loopback http(s) origin. */
export function originAllowed(
  origin: string | undefined,
  allowed: readonly string[],
): boolean {
  if (origin === undefined) return true;
  if (allowed.includes('*') || allowed.includes(origin)) return true;
  try {
    const url = new URL(origin);
    return (
      (url.protocol === 'http:' || url.protocol === 'https:') &&
      LOOPBACK_HOSTS.has(url.hostname)
    );
  } catch {
    return false;
  }
}

/** DNS rebinding (spec §14.2 Security): both Host and Origin, before anything else is looked at. */
export const checkHostAndOrigin: Guard = (request, options) =>
  hostAllowed(request.headers.host, options.allowedHosts) &&
  originAllowed(request.headers.origin, options.allowedOrigins)
    ? undefined
    : {
        key: 'FORBIDDEN_ORIGIN',
        message: 'Forbidden: Host or Origin not allowed.',
      };

export const checkMethod: Guard = (request, options) =>
  request.method === 'POST'
    ? undefined
    : {
        key: 'HTTP_METHOD_NOT_ALLOWED',
        message: 'Method not allowed: the MCP endpoint accepts POST only.',
        headers: {
          Allow: options.otherEra === undefined ? 'POST' : 'GET, POST, DELETE',
        },
      };

export const checkContentType: Guard = (request) =>
  /^application\/json\s*(;|$)/i.test(request.headers['content-type'] ?? '')
    ? undefined
    : {
        key: 'UNSUPPORTED_MEDIA_TYPE',
        message: 'Unsupported Content-Type: send application/json.',
      };

/** No Accept, or one that admits JSON or SSE (the two ways an answer comes). */
export const checkAccept: Guard = (request) => {
  const accept = request.headers.accept;
  return accept === undefined ||
    accept === '' ||
    /application\/json|text\/event-stream|\*\/\*|application\/\*/i.test(accept)
    ? undefined
    : {
        key: 'NOT_ACCEPTABLE',
        message:
          'Not acceptable: accept application/json or text/event-stream.',
      };
};

const GUARDS: readonly Guard[] = [
  checkHostAndOrigin,
  checkMethod,
  checkContentType,
  checkAccept,
];

/** The first guard that refuses the request, in the order above; undefined if all pass. */
export function firstRefusal(
  request: http.IncomingMessage,
  options: GuardOptions,
): GuardRefusal | undefined {
  for (const guard of GUARDS) {
    const refusal = guard(request, options);
    if (refusal !== undefined) return refusal;
  }
  return undefined;
}

/** A Content-Length over the limit: refused (413) before authentication or reading. */
export function declaresTooLarge(
  request: http.IncomingMessage,
  maxBodyBytes: number,
): boolean {
  const declared = Number(request.headers['content-length'] ?? Number.NaN);
  return Number.isFinite(declared) && declared > maxBodyBytes;
}
