// Connection strings reach logs (start-up, a moved primary) only through redactConnectionString:
// no form of a password libpq and pg accept in a URL may survive it.
import { describe, expect, it } from 'vitest';
import { redactConnectionString } from '../../src/config/index.js';

describe('redactConnectionString', () => {
  it.each([
    ['postgres://app:s3cret@db:5432/main', 'postgres://app:***@db:5432/main'],
    ['postgresql://:s3cret@db/main', 'postgresql://:***@db/main'],
    [
      'postgres://app@db/main?password=s3cret&sslmode=require',
      'postgres://app@db/main?password=***&sslmode=require',
    ],
    [
      'postgres://db/main?sslmode=verify-full&sslpassword=s3cret',
      'postgres://db/main?sslmode=verify-full&sslpassword=***',
    ],
    [
      'postgres://app:s3cret@db/main?PASSWORD=s3cret',
      'postgres://app:***@db/main?PASSWORD=***',
    ],
  ])('hides the password of %s', (url, shown) => {
    expect(redactConnectionString(url)).toBe(shown);
    expect(redactConnectionString(url)).not.toContain('s3cret');
  });

  it('leaves a URL without a password as it is, its port and parameters included', () => {
    for (const url of [
      'postgres://app@db:5432/main',
      'postgres://db:5432/main?application_name=a@b',
      'postgres://db/main?sslmode=require',
    ])
      expect(redactConnectionString(url)).toBe(url);
  });
});
