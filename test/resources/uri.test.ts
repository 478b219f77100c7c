// URI validation and RFC 6570 templates.
import { describe, expect, it } from 'vitest';
import { ProtocolError } from '../../src/errors.js';
import {
  isDirectoryUri,
  parseUriTemplate,
  validateResourceUri,
} from '../../src/resources/index.js';

describe('validateResourceUri', () => {
  it('accepts URIs of any scheme, including IRIs, and returns them unchanged', () => {
    for (const uri of [
      'notes:///ops/runbook-1',
      'test://static-text',
      'https://example.com/a?b=c#d',
      'urn:isbn:0451450523',
      'notes:///café/menü',
      'pg://db/sch%20ema/t',
    ]) {
      expect(validateResourceUri(uri)).toBe(uri);
    }
  });

  it('normalizes file: paths (unreserved escapes decoded, hex upper-cased)', () => {
    expect(validateResourceUri('file:///a/%7euser/%e2%82%ac.txt')).toBe(
      'file:///a/~user/%E2%82%AC.txt',
    );
    expect(validateResourceUri('file:///a/b%2Ec')).toBe('file:///a/b.c');
    expect(validateResourceUri('file:///')).toBe('file:///');
    expect(validateResourceUri('file://host/a/')).toBe('file://host/a/');
  });

  it.each([
    ['file:///a/../b', 'dot-dot segment'],
    ['file:///a/%2e%2E/b', 'encoded dot-dot'],
    ['file:///a/..', 'trailing dot-dot'],
    ['file:///./a', 'dot segment'],
    ['file:///a//b', 'empty segment'],
    ['file:///a\\b', 'backslash'],
    ['file:///a/%5Cb', 'encoded backslash'],
    ['file:///a/%00', 'encoded NUL'],
    ['file:///a/%2F', 'encoded slash'],
    ['file:relative/path', 'relative file URI'],
    ['notes:///a\u0000b', 'NUL'],
    ['notes:///a\nb', 'newline'],
    ['notes:///a\u0085b', 'C1 control'],
    ['notes:///a b', 'space'],
    ['notes:///a<b>', 'angle brackets'],
    ['1notes:///a', 'scheme starting with a digit'],
    ['notes', 'no scheme'],
    ['', 'empty'],
    ['notes:///%zz', 'broken escape'],
    ['a:#b#c', 'two fragments'],
    [`notes:///${'a'.repeat(2048)}`, 'too long'],
  ])('rejects %s (%s) with INVALID_URI', (uri) => {
    try {
      validateResourceUri(uri);
      throw new Error('accepted');
    } catch (error) {
      expect(error).toBeInstanceOf(ProtocolError);
      expect((error as ProtocolError).key).toBe('INVALID_URI');
    }
  });

  it('recognizes file: directories by their trailing slash', () => {
    expect(isDirectoryUri('file:///a/')).toBe(true);
    expect(isDirectoryUri('file:///a')).toBe(false);
    expect(isDirectoryUri('notes:///a/')).toBe(false);
  });
});

describe('RFC 6570 templates', () => {
  it('expands and matches simple variables, decoding %xx', () => {
    const template = parseUriTemplate('notes:///{tag}/{slug}');
    expect(template.variables).toEqual(['tag', 'slug']);
    expect(template.expand({ tag: 'on call', slug: 'a/b' })).toBe(
      'notes:///on%20call/a%2Fb',
    );
    expect(template.match('notes:///on%20call/a%2Fb')).toEqual({
      tag: 'on call',
      slug: 'a/b',
    });
    expect(template.match('notes:///ops/runbook')).toEqual({
      tag: 'ops',
      slug: 'runbook',
    });
    expect(template.match('notes:///ops/run/book')).toBeUndefined();
    expect(template.match('notes:///ops/%E0%A4%A')).toBeUndefined();
  });

  it('expands and matches reserved expansion across slashes', () => {
    const template = parseUriTemplate('file:///{+path}');
    expect(template.expand({ path: 'handbook/teams/a b.md' })).toBe(
      'file:///handbook/teams/a%20b.md',
    );
    expect(template.match('file:///handbook/teams/README.md')).toEqual({
      path: 'handbook/teams/README.md',
    });
    expect(template.match('notes:///x')).toBeUndefined();
  });

  it('supports the level-3 operators for expansion', () => {
    expect(
      parseUriTemplate('x:{/a,b}{?q,r}{#f}').expand({
        a: '1',
        b: '2',
        q: 'x y',
        f: 'top',
      }),
    ).toBe('x:/1/2?q=x%20y#top');
    expect(parseUriTemplate('x:/list{?q,r}').match('x:/list?q=a&r=b')).toEqual({
      q: 'a',
      r: 'b',
    });
  });

  it('refuses malformed templates', () => {
    expect(() => parseUriTemplate('notes:///{tag')).toThrow(/unclosed/);
    expect(() => parseUriTemplate('notes:///{ta g}')).toThrow(/unsupported/);
    expect(() => parseUriTemplate('notes:///{tag*}')).toThrow(/unsupported/);
  });
});

describe('isoTimestamp', () => {
  it('formats UTC timestamptz text like Date#toISOString, for any fraction length', async () => {
    const { isoTimestamp } = await import('../../src/resources/render.js');
    expect(isoTimestamp('2026-11-30 05:53:46.761234+00')).toBe(
      '2026-11-30T05:53:46.761Z',
    );
    expect(isoTimestamp('2026-11-30 05:53:46.7+00')).toBe(
      '2026-11-30T05:53:46.700Z',
    );
    expect(isoTimestamp('2026-11-30 05:53:46+00')).toBe(
      '2026-11-30T05:53:46.000Z',
    );
    expect(isoTimestamp('2026-11-30 06:53:46.5+01')).toBe(
      '2026-11-30T05:53:46.500Z',
    );
  });
});
