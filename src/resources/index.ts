// Public surface of resources/: the handlers app.ts registers, plus URI helpers.
export { createListResourcesMethod } from './list.js';
export { createKeysetListMethod, type ListDependencies } from './keyset.js';
export { createListTemplatesMethod } from './templates.js';
export {
  createReadResourceMethod,
  META_TRUNCATED,
  type ReadDependencies,
} from './read.js';
export { cacheHints, TTL_MS } from './cache-hints.js';
export { MAX_URI_LENGTH, isDirectoryUri, validateResourceUri } from './uri.js';
export { parseUriTemplate, type UriTemplate } from './uri-template.js';
