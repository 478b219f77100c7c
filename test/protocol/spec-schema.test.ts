// The response validator every test goes through (test/setup/spec-schema.ts) checks in every
// clone: it rejects what the official schemas reject, and what no schema covers.
import { describe, expect, it } from 'vitest';
import {
  assertValidNotification,
  assertValidResponse,
} from '../setup/spec-schema.js';

const listResult = {
  jsonrpc: '2.0',
  id: 1,
  result: {
    resultType: 'complete',
    ttlMs: 60_000,
    cacheScope: 'public',
    resources: [{ uri: 'notes:///a/b', name: 'b' }],
  },
};

describe('the schema check on responses and notifications', () => {
  it('accepts a valid resources/list response', () => {
    expect(() =>
      assertValidResponse('resources/list', listResult),
    ).not.toThrow();
  });

  it.each([
    [
      'a resource without its name',
      'resources/list',
      { ...listResult, result: { resources: [{ uri: 'notes:///a/b' }] } },
    ],
    [
      'contents that are not an array',
      'resources/read',
      { jsonrpc: '2.0', id: 1, result: { contents: {} } },
    ],
    [
      'discover without supportedVersions',
      'server/discover',
      { jsonrpc: '2.0', id: 1, result: { capabilities: {} } },
    ],
    [
      'a result for a method with no 2026-07-28 result schema',
      'initialize',
      { jsonrpc: '2.0', id: 1, result: { tools: [] } },
    ],
    ['a result for no named method', undefined, listResult],
    [
      'a response with neither result nor error',
      'resources/list',
      { jsonrpc: '2.0', id: 1 },
    ],
    [
      'an error without a numeric code',
      'resources/list',
      { jsonrpc: '2.0', id: 1, error: { code: 'x', message: 'm' } },
    ],
  ])('rejects %s', (_, method, message) => {
    expect(() => assertValidResponse(method, message)).toThrow();
  });

  it('rejects notifications the server may not send or that break their schema', () => {
    expect(() =>
      assertValidNotification({
        jsonrpc: '2.0',
        method: 'notifications/resources/updated',
        params: { uri: 'notes:///a/b' },
      }),
    ).not.toThrow();
    expect(() =>
      assertValidNotification({
        jsonrpc: '2.0',
        method: 'notifications/resources/updated',
        params: {},
      }),
    ).toThrow(/notifications\/resources\/updated/);
    expect(() =>
      assertValidNotification({
        jsonrpc: '2.0',
        method: 'notifications/elicitation/complete',
        params: { elicitationId: 'x' },
      }),
    ).toThrow(/unexpected server notification/);
  });
});
