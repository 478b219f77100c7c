// vitest's asymmetric matchers, typed as what they are to a caller (unknown) rather than `any`:
// inside an expected object an `any` is an unchecked value the lint refuses (no-unsafe-assignment).
import { expect } from 'vitest';

export const match = {
  any: (type: unknown): unknown => expect.any(type),
  arrayContaining: (items: unknown[]): unknown => expect.arrayContaining(items),
  objectContaining: (fields: Record<string, unknown>): unknown =>
    expect.objectContaining(fields),
  stringContaining: (text: string): unknown => expect.stringContaining(text),
  stringMatching: (pattern: string | RegExp): unknown =>
    expect.stringMatching(pattern),
};
