// URI validation before any query (issue: URI safety): RFC 3986 syntax, a length cap, no control
// characters; file: paths normalized and traversal rejected. Mirrors pgmcp.uri_is_valid in SQL.
import { ProtocolError } from '../errors.js';

const MAX_URI_LENGTH = 2048;

// scheme ":" then RFC 3986 characters, percent-escapes, or non-ASCII (IRI) characters past C1.
const URI_SYNTAX =
  /^[A-Za-z][A-Za-z0-9+.-]*:(?:[A-Za-z0-9._~!$&'()*+,;=:@/?#[\]-]|%[0-9A-Fa-f]{2}|[^\u0000-\u009f])*$/u;
const UNRESERVED = /[A-Za-z0-9\-._~]/;

/**
 * Validate a client-supplied resource URI and return the form to look up.
 * Every URI: ≤ 2048 characters, RFC 3986 syntax, at most one "#". file: URIs are also normalized
 * (percent-escapes of unreserved characters decoded, hex upper-cased) and refused if the path has
 * "." or ".." segments (also encoded), empty segments, backslashes or NUL, or an encoded "/".
 * Throws INVALID_URI (-32602) naming the rule; never echoes more than the URI itself in `data`.
 */
export function validateResourceUri(uri: string): string {
  const invalid = (reason: string): never => {
    throw new ProtocolError('INVALID_URI', `Invalid resource URI: ${reason}.`, {
      data: { uri: uri.length > MAX_URI_LENGTH ? `${uri.slice(0, 64)}…` : uri },
    });
  };
  if (uri.length === 0) return invalid('empty');
  if (uri.length > MAX_URI_LENGTH)
    return invalid(`longer than ${MAX_URI_LENGTH} characters`);
  // Control characters, spaces and backslashes are reported by name before the general syntax.
  if (/[\u0000-\u001f\u007f-\u009f]/u.test(uri))
    return invalid('control characters are not allowed');
  if (uri.includes('\\')) return invalid('backslashes are not allowed');
  if (!URI_SYNTAX.test(uri)) return invalid('not RFC 3986 syntax');
  if (uri.indexOf('#') !== uri.lastIndexOf('#'))
    return invalid('more than one "#"');
  if (/^file:/i.test(uri)) return normalizeFileUri(uri, invalid);
  return uri;
}

function normalizeFileUri(
  uri: string,
  invalid: (reason: string) => never,
): string {
  const match = /^file:\/\/([^/?#]*)(\/[^?#]*)?([?#].*)?$/i.exec(uri);
  if (match === null || match[2] === undefined)
    return invalid('file: URIs must be absolute, like file:///path');
  const [, host = '', rawPath, rest = ''] = match;
  if (/%(?:00|5c|2f)/i.test(rawPath))
    return invalid('encoded NUL, backslash or "/" in a file path');
  // Decode escapes of unreserved characters (RFC 3986 §6.2.2.2) so %2e%2e is seen as "..".
  const path = rawPath.replace(
    /%([0-9A-Fa-f]{2})/g,
    (escape: string, hex: string) => {
      const char = String.fromCharCode(parseInt(hex, 16));
      return UNRESERVED.test(char) ? char : `%${hex.toUpperCase()}`;
    },
  );
  const segments = path.slice(1).split('/');
  // A trailing "/" (a directory) leaves one empty last segment; any other empty segment is refused.
  const inner = path.endsWith('/') ? segments.slice(0, -1) : segments;
  if (path !== '/' && inner.some((segment) => segment === ''))
    return invalid('empty path segments ("//")');
  if (inner.some((segment) => segment === '.' || segment === '..'))
    return invalid('"." and ".." path segments');
  return `file://${host}${path}${rest}`;
}

/** True for a file: URI naming a directory (path ends in "/"). */
export function isDirectoryUri(uri: string): boolean {
  return /^file:\/\/[^/?#]*\/[^?#]*$/i.test(uri) && uri.endsWith('/');
}

/** The exclusive upper bound of all URIs starting with `prefix` in C collation ("/" + 1 = "0"). */
export function prefixUpperBound(prefix: string): string {
  const last = prefix.charCodeAt(prefix.length - 1);
  return prefix.slice(0, -1) + String.fromCharCode(last + 1);
}

/**
 * One percent-decoded URI component, or undefined when it names nothing that can exist: a
 * malformed escape or invalid UTF-8 (where decodeURIComponent throws), or a NUL, which no
 * Postgres name or text value holds.
 */
export function decodeUriComponent(raw: string): string | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return undefined;
  }
  return decoded.includes('\u0000') ? undefined : decoded;
}
