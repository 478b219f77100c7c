// What auth/ says about the server itself: the signing secret kept in the state folder, the token
// audience and the protected-resource metadata document (RFC 9728).
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  developmentSecretFile,
  jwtSecret,
  protectedResourceMetadata,
  tokenAudience,
} from '../../src/auth/index.js';

const CONFIGURED = 'a-configured-secret-that-is-long-enough-0123';

describe('the HS256 signing secret', () => {
  it('is the configured one, and then no file is read or made', () => {
    const stateDirectory = mkdtempSync(path.join(tmpdir(), 'pgmcp-state-'));
    const settings = { secret: CONFIGURED, jwksUrl: undefined, stateDirectory };
    expect(jwtSecret(settings)).toBe(CONFIGURED);
    expect(developmentSecretFile(settings)).toBeUndefined();
    expect(existsSync(path.join(stateDirectory, 'jwt-secret'))).toBe(false);
  });

  it('is none with only a JWKS URL, or outside the embedded default', () => {
    const stateDirectory = mkdtempSync(path.join(tmpdir(), 'pgmcp-state-'));
    expect(
      jwtSecret({
        secret: undefined,
        jwksUrl: 'https://id.example.com/jwks',
        stateDirectory,
      }),
    ).toBeUndefined();
    expect(
      jwtSecret({
        secret: undefined,
        jwksUrl: undefined,
        stateDirectory: undefined,
      }),
    ).toBeUndefined();
    expect(existsSync(path.join(stateDirectory, 'jwt-secret'))).toBe(false);
  });

  it('is made once in the state folder, owner-only, and not made when asked not to', () => {
    const stateDirectory = path.join(
      mkdtempSync(path.join(tmpdir(), 'pgmcp-state-')),
      '.pgmcp',
    );
    const settings = { secret: undefined, jwksUrl: undefined, stateDirectory };
    const file = path.join(stateDirectory, 'jwt-secret');
    expect(developmentSecretFile(settings)).toBe(file);
    expect(jwtSecret(settings, { create: false })).toBeUndefined();
    expect(existsSync(file)).toBe(false);
    const made = jwtSecret(settings);
    expect(made).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(readFileSync(file, 'utf8')).toBe(`${made}\n`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(jwtSecret(settings, { create: false })).toBe(made);
    expect(jwtSecret(settings)).toBe(made);
  });
});

describe('the token audience', () => {
  it('is the configured audience, else the resource URL on the bound port, an IPv6 host in brackets', () => {
    expect(
      tokenAudience(
        { audience: 'https://mcp.example.com/mcp', host: '::1' },
        0,
      ),
    ).toBe('https://mcp.example.com/mcp');
    expect(
      tokenAudience({ audience: undefined, host: '127.0.0.1' }, 4321),
    ).toBe('http://127.0.0.1:4321/mcp');
    expect(tokenAudience({ audience: undefined, host: '::1' }, 80)).toBe(
      'http://[::1]:80/mcp',
    );
  });
});

describe('the protected-resource metadata', () => {
  it('names the resource, its issuer (by default the resource’s origin) and header bearer tokens', () => {
    expect(
      protectedResourceMetadata('http://127.0.0.1:4321/mcp', undefined),
    ).toEqual({
      metadataUrl:
        'http://127.0.0.1:4321/.well-known/oauth-protected-resource/mcp',
      document: {
        resource: 'http://127.0.0.1:4321/mcp',
        authorization_servers: ['http://127.0.0.1:4321'],
        bearer_methods_supported: ['header'],
      },
    });
    expect(
      protectedResourceMetadata(
        'https://mcp.example.com/mcp',
        'https://id.example.com/',
      ).document['authorization_servers'],
    ).toEqual(['https://id.example.com/']);
  });
});
