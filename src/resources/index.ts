// Public surface of resources/: the handlers app/ registers, plus URI helpers.
export { createListResourcesMethod } from './list.js';
export {
  createKeysetListMethod,
  type ListDependencies,
  type ListPage,
} from './keyset.js';
export { RolePageMemo } from './role-page-memo.js';
export { createListTemplatesMethod } from './templates.js';
export {
  createReadResourceMethod,
  readContents,
  type ReadDependencies,
} from './read.js';
export { catalogUri, encodeRowKey, rowUri } from './catalog-uri.js';
export { TTL_MS } from './cache-hints.js';
export { isDirectoryUri, validateResourceUri } from './uri.js';
export { parseUriTemplate, type UriTemplate } from './uri-template.js';
export { readableUris } from './subscriptions.js';
export { currentDatabaseName } from './statements/catalog-statements.js';
export { inspectCollection, setExposed } from './statements/row-statements.js';
export { createCompleteMethod } from './completion.js';
export {
  catalogSource,
  isSensitiveTable,
  type CatalogSource,
} from './catalog-source.js';
export { deliveredChanges, type DeliveredChange } from './delivered-changes.js';
export {
  type CatalogScope,
  type CollectionConfig,
  type SensitiveTable,
} from './collection-settings.js';
export {
  createConsentGate,
  type ConsentGate,
  type ConsentOptions,
} from './consent.js';
