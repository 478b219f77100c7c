// The resources feature wired: list, templates, read and completion over the sources, with the
// consent gate before sensitive reads.
import {
  completePromptArgument,
  type PromptDependencies,
} from '../prompts/index.js';
import type { readContents } from '../resources/index.js';
import {
  createCompleteMethod,
  createConsentGate,
  createListResourcesMethod,
  createListTemplatesMethod,
  createReadResourceMethod,
  type ConsentGate,
} from '../resources/index.js';
import { createCursorCodec } from '../protocol/index.js';
import type { AppOptions } from './app-options.js';

/** What the resources feature offers and what the other features read through. */
export interface ResourceFeature {
  readonly listDeps: Parameters<typeof createListResourcesMethod>[0];
  readonly readDeps: Parameters<typeof readContents>[0];
  readonly consent: ConsentGate;
  readonly list: ReturnType<typeof createListResourcesMethod>;
  readonly templates: ReturnType<typeof createListTemplatesMethod>;
  readonly read: ReturnType<typeof createReadResourceMethod>;
}

/** resources/list, resources/templates/list and resources/read over `options`' sources. */
export function wireResources(options: AppOptions): ResourceFeature {
  const listDeps = {
    db: options.db,
    sources: options.sources,
    cursors: createCursorCodec(options.cursorSecrets),
    pageSize: options.pageSize,
  };
  const consent = createConsentGate({
    db: options.db,
    secrets: options.cursorSecrets,
    expiryMinutes: options.consentMinutes ?? 10,
    now: options.now,
  });
  const readDeps = {
    db: options.db,
    sources: options.sources,
    maxDirectoryEntries: options.maxDirectoryEntries,
    pageSize: options.pageSize,
    changeRetentionSeconds: options.live.changeRetentionSeconds,
    consent,
  };
  return {
    listDeps,
    readDeps,
    consent,
    list: createListResourcesMethod(listDeps),
    templates: createListTemplatesMethod(listDeps),
    read: createReadResourceMethod(readDeps),
  };
}

/** completion/complete: resource template variables, and prompt arguments through prompts/. */
export function completeMethod(
  options: AppOptions,
  prompts: PromptDependencies,
): ReturnType<typeof createCompleteMethod> {
  return createCompleteMethod({
    db: options.db,
    sources: options.sources,
    completePrompt: (name, argument, ctx) =>
      completePromptArgument(prompts, ctx, { name, argument }),
  });
}
