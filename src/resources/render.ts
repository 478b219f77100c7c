// Render stage: MCP JSON straight from Postgres' text output, without building JS objects per row.
import {
  COLUMN,
  type ResourceContentRow,
  type ResourceListingRow,
} from './statements/resource-statements.js';

// Characters JSON.stringify would escape (", \, controls) or may escape (lone surrogates: any
// surrogate sends the string down the slow path, which handles pairs and lone ones alike).
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * JSON.stringify of a string, byte for byte. Most column values (URIs, names, titles, prose) need no
 * escapes: they are quoted as they are, without the stringifier's per-call setup and copy.
 */
export function jsonString(value: string): string {
  return NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`;
}

// The audience column holds a handful of distinct arrays ({assistant}, {user,assistant}, …):
// convert each once. Bounded, since the column's check constraint allows only subsets of two values.
const audienceCache = new Map<string, string>();

/** Postgres text[] output of the audience column → JSON array text. */
function audienceJson(value: string): string {
  let json = audienceCache.get(value);
  if (json === undefined) {
    const inner = value.slice(1, -1);
    json =
      inner === ''
        ? '[]'
        : JSON.stringify(
            inner.split(',').map((item) => item.replace(/^"|"$/g, '')),
          );
    if (audienceCache.size < 64) audienceCache.set(value, json);
  }
  return json;
}

/**
 * timestamptz text from a TimeZone=UTC session ("2026-11-30 05:53:46.761234+00") → ISO 8601 with
 * milliseconds, as Date#toISOString writes it ("2026-11-30T05:53:46.761Z"). Anything else
 * (another session time zone) goes through Date.
 */
export function isoTimestamp(value: string): string {
  // The usual form, with at least milliseconds: date, "T", time to the millisecond, "Z".
  if (
    value.length >= 26 &&
    value.charCodeAt(10) === 32 &&
    value.charCodeAt(19) === 46 &&
    value.endsWith('+00')
  )
    return `${value.slice(0, 10)}T${value.slice(11, 23)}Z`;
  if (
    value.length >= 22 &&
    value.endsWith('+00') &&
    value.charCodeAt(10) === 32
  ) {
    const time = value.slice(11, -3);
    const dot = time.indexOf('.');
    const fraction =
      dot === -1 ? '.000' : time.slice(dot, dot + 4).padEnd(4, '0');
    return `${value.slice(0, 10)}T${dot === -1 ? time : time.slice(0, dot)}${fraction}Z`;
  }
  return new Date(
    value.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00'),
  ).toISOString();
}

// mime_type too repeats a handful of values across rows: its JSON string is kept the same way.
const mimeTypeCache = new Map<string, string>();

function mimeTypeJson(value: string): string {
  let json = mimeTypeCache.get(value);
  if (json === undefined) {
    json = jsonString(value);
    if (mimeTypeCache.size < 64) mimeTypeCache.set(value, json);
  }
  return json;
}

function annotationsJson(row: ResourceListingRow | ResourceContentRow): string {
  let json = '{';
  const audience = row[COLUMN.audience];
  if (audience !== null) json += `"audience":${audienceJson(audience)},`;
  // float8 output is a valid JSON number ("0.91", "1e-05"); the check constraint keeps it in 0..1.
  const priority = row[COLUMN.priority];
  if (priority !== null) json += `"priority":${priority},`;
  return `${json}"lastModified":"${isoTimestamp(row[COLUMN.updated_at])}"}`;
}

/**
 * The MCP `Resource` object of a row, as a list page shows it: `uri`, `name`, then `title`,
 * `description` and `mimeType` when set, `size`, and `annotations` (as pgmcp.list_entry() writes
 * it, migration 0010).
 */
export function renderResource(row: ResourceListingRow): string {
  let json = `{"uri":${jsonString(row[COLUMN.uri])},"name":${jsonString(row[COLUMN.name])}`;
  const title = row[COLUMN.title];
  if (title !== null) json += `,"title":${jsonString(title)}`;
  const description = row[COLUMN.description];
  if (description !== null) json += `,"description":${jsonString(description)}`;
  const mimeType = row[COLUMN.mime_type];
  if (mimeType !== null) json += `,"mimeType":${mimeTypeJson(mimeType)}`;
  return `${json},"size":${row[COLUMN.size]},"annotations":${annotationsJson(row)}}`;
}

/**
 * The MCP `TextResourceContents` / `BlobResourceContents` of a row, as JSON text. Blobs are
 * standard base64. Size and annotations, which ResourceContents has no fields for, ride in
 * `_meta` as `dev.pgmcp/size` and `dev.pgmcp/annotations`.
 */
export function renderContents(
  row: ResourceContentRow,
  extraMeta = '',
): string {
  let json = `{"uri":${jsonString(row[COLUMN.uri])}`;
  const mimeType = row[COLUMN.mime_type];
  if (mimeType !== null) json += `,"mimeType":${mimeTypeJson(mimeType)}`;
  // bytea arrives in hex output form: "\x" followed by two hex digits per byte.
  const blob = row[COLUMN.blob];
  if (blob !== null)
    json += `,"blob":"${Buffer.from(blob.slice(2), 'hex').toString('base64')}"`;
  else json += `,"text":${jsonString(row[COLUMN.text] ?? '')}`;
  return `${json},"_meta":{"dev.pgmcp/size":${row[COLUMN.size]},"dev.pgmcp/annotations":${annotationsJson(row)}${extraMeta}}}`;
}
