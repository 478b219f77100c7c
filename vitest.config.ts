import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/setup/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    forbidOnly: process.env['CI'] !== undefined,
    pool: 'forks',
    reporters: ['default', './test/setup/summary-reporter.ts'],
  },
});
