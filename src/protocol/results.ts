// Results as they go out (spec §3.3): resultType first, the server's `_meta` last; a constant
// method's answer and a kept result serialized once.
import type { KeptResult } from './raw-json.js';
import { RawJson, serializeMessage } from './raw-json.js';
import { META_SERVER_INFO, type Implementation } from './wire.js';

/**
 * Results as they go out: resultType first, the server's _meta last. A constant method's result
 * and a kept result are serialized once.
 */
export class Results {
  // Keyed by handler identity, whatever its params type.
  readonly #constant = new Map<object, RawJson>();
  // A kept result's serialization, while its handler keeps handing it out.
  readonly #kept = new WeakMap<KeptResult, RawJson>();
  // The same on every result: serialize it once.
  readonly #meta: RawJson;

  constructor(serverInfo: Implementation) {
    this.#meta = new RawJson(
      JSON.stringify({ [META_SERVER_INFO]: serverInfo }),
    );
  }

  constantOf(method: object): RawJson | undefined {
    return this.#constant.get(method);
  }

  complete(
    payload: Readonly<Record<string, unknown>>,
  ): Record<string, unknown> {
    return { resultType: 'complete', ...payload, _meta: this.#meta };
  }

  keepConstant(
    method: object,
    payload: Readonly<Record<string, unknown>>,
  ): RawJson {
    const serialized = this.#serialized(payload);
    this.#constant.set(method, serialized);
    return serialized;
  }

  kept(result: KeptResult): RawJson {
    let serialized = this.#kept.get(result);
    if (serialized === undefined) {
      serialized = this.#serialized(result.payload);
      this.#kept.set(result, serialized);
    }
    return serialized;
  }

  #serialized(payload: Readonly<Record<string, unknown>>): RawJson {
    return new RawJson(
      serializeMessage({ result: this.complete(payload) }).slice(
        '{"result":'.length,
        -1,
      ),
    );
  }
}
