// The HTTP guards as plain functions: each rule, and the order a request meets them in.
import type http from 'node:http';
import { describe, expect, it } from 'vitest';
import {
  declaresTooLarge,
  firstRefusal,
  hostAllowed,
  originAllowed,
} from '../../src/transport/http-guards.js';

const options = { allowedHosts: ['127.0.0.1'], allowedOrigins: [] };

function request(
  method: string,
  headers: http.IncomingHttpHeaders,
): http.IncomingMessage {
  return { method, headers } as http.IncomingMessage;
}

const good = {
  host: '127.0.0.1:3000',
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
};

describe('http guards', () => {
  it('match Host by name without port, and accept loopback or listed origins', () => {
    expect(hostAllowed('127.0.0.1:8080', ['127.0.0.1'])).toBe(true);
    expect(hostAllowed('[::1]:8080', ['[::1]'])).toBe(true);
    expect(hostAllowed('EVIL.example', ['evil.example'])).toBe(true);
    expect(hostAllowed('evil.example', ['127.0.0.1'])).toBe(false);
    expect(hostAllowed(undefined, ['*'])).toBe(false);
    expect(hostAllowed('anything', ['*'])).toBe(true);
    expect(originAllowed(undefined, [])).toBe(true);
    expect(originAllowed('http://localhost:5173', [])).toBe(true);
    expect(originAllowed('https://app.example', ['https://app.example'])).toBe(
      true,
    );
    expect(originAllowed('https://evil.example', [])).toBe(false);
    expect(originAllowed('file://localhost', [])).toBe(false);
    expect(originAllowed('not a url', [])).toBe(false);
  });

  it('pass a well-formed POST', () => {
    expect(firstRefusal(request('POST', good), options)).toBeUndefined();
    expect(
      firstRefusal(request('POST', { ...good, accept: undefined }), options),
    ).toBeUndefined();
  });

  it('refuse in order: Host/Origin, then method (with Allow), then content type, then Accept', () => {
    const bad = {
      host: 'evil.example',
      'content-type': 'text/plain',
      accept: 'text/html',
    };
    const keys = [
      request('GET', bad),
      request('GET', { ...bad, host: good.host }),
      request('POST', { ...bad, host: good.host }),
      request('POST', {
        ...bad,
        host: good.host,
        'content-type': 'application/json; charset=utf-8',
      }),
    ].map((each) => firstRefusal(each, options));
    expect(keys.map((refusal) => refusal?.key)).toEqual([
      'FORBIDDEN_ORIGIN',
      'HTTP_METHOD_NOT_ALLOWED',
      'UNSUPPORTED_MEDIA_TYPE',
      'NOT_ACCEPTABLE',
    ]);
    expect(keys[1]?.headers).toEqual({ Allow: 'POST' });
  });

  it('name GET and DELETE in Allow when legacy sessions are served (they are routed before the guards)', () => {
    const refusal = firstRefusal(request('PUT', good), {
      ...options,
      otherEra: {},
    });
    expect(refusal?.key).toBe('HTTP_METHOD_NOT_ALLOWED');
    expect(refusal?.headers).toEqual({ Allow: 'GET, POST, DELETE' });
  });

  it('refuse a declared body over the limit, and let an undeclared one through to the reader', () => {
    expect(
      declaresTooLarge(request('POST', { 'content-length': '11' }), 10),
    ).toBe(true);
    expect(
      declaresTooLarge(request('POST', { 'content-length': '10' }), 10),
    ).toBe(false);
    expect(declaresTooLarge(request('POST', {}), 10)).toBe(false);
  });
});
