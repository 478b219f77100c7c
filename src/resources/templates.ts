// resources/templates/list: stored RFC 6570 templates, paginated like every collection.
import {
  LIST_TEMPLATES_PAGE,
  type TemplateListingRow,
} from './statements/resource-statements.js';
import type {
  MethodHandler,
  PaginatedParams,
  ResourceTemplate,
} from '../protocol/index.js';
import { createKeysetListMethod, type ListDependencies } from './keyset.js';

function renderTemplate(row: TemplateListingRow): string {
  const template: ResourceTemplate = {
    uriTemplate: row.uri_template,
    name: row.name,
  };
  if (row.title !== null) template.title = row.title;
  if (row.description !== null) template.description = row.description;
  if (row.mime_type !== null) template.mimeType = row.mime_type;
  return JSON.stringify(template);
}

/** Templates from pgmcp.resource_templates in primary-key order, keyset-paginated. */
export function createListTemplatesMethod(
  deps: ListDependencies,
): MethodHandler<PaginatedParams> {
  return createKeysetListMethod(deps, {
    collection: 'templates',
    query: LIST_TEMPLATES_PAGE,
    field: 'resourceTemplates',
    render: renderTemplate,
    keyOf: (row) => row.id,
    cache: 'templates',
  });
}
