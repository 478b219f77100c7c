// server/discover (spec §3.5): versions, capabilities and instructions; cacheable.
import { createMethod, type MethodHandler } from './dispatch.js';
import { EmptyParamsSchema, SUPPORTED_VERSIONS } from './wire.js';

export interface DiscoverOptions {
  readonly capabilities: Record<string, unknown>;
  readonly instructions: string;
  readonly ttlMs: number;
}

/** The discover answer is the same for every caller, so it is `public`. */
export function createDiscoverMethod(
  options: DiscoverOptions,
): MethodHandler<Record<string, never>> {
  return createMethod({
    params: EmptyParamsSchema,
    // The same for every caller and the life of the process: the dispatcher serializes it once.
    constant: true,
    handle: () =>
      Promise.resolve({
        supportedVersions: [...SUPPORTED_VERSIONS],
        capabilities: options.capabilities,
        instructions: options.instructions,
        ttlMs: options.ttlMs,
        cacheScope: 'public',
      }),
  });
}
