import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/setup/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // A .only fails the run on CI by vitest's own default (allowOnly: !isCI).
    pool: 'forks',
    reporters: ['default', './test/setup/summary-reporter.ts'],
  },
});
