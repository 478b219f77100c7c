// server/discover (spec §3.5): versions, capabilities and instructions; cacheable.
import { createMethod, type MethodHandler } from './dispatch.js';
import { RawJson } from './raw-json.js';
import { EmptyParamsSchema, SUPPORTED_VERSIONS } from './wire.js';

export interface DiscoverOptions {
  readonly capabilities: Record<string, unknown>;
  readonly instructions: string;
  readonly ttlMs: number;
}

/** The discover answer is the same for every caller, so it is `public`. */
export function createDiscoverMethod(options: DiscoverOptions): MethodHandler<Record<string, never>> {
  // Constant for the life of the process: serialize the body of the answer once.
  const supportedVersions = new RawJson(JSON.stringify(SUPPORTED_VERSIONS));
  const capabilities = new RawJson(JSON.stringify(options.capabilities));
  const instructions = new RawJson(JSON.stringify(options.instructions));
  return createMethod({
    params: EmptyParamsSchema,
    handle: async () => ({ supportedVersions, capabilities, instructions, ttlMs: options.ttlMs, cacheScope: 'public' }),
  });
}
