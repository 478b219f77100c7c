import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/setup/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // A .only fails the run on CI by vitest's own default (allowOnly: !isCI).
    pool: 'forks',
    // Files run one after another in one worker that keeps its loaded modules: each file starting
    // its servers and pools and closing them is the isolation the suite needs, and importing the
    // source once instead of once per file is a large share of a run on two cores.
    isolate: false,
    reporters: ['default', './test/setup/summary-reporter.ts'],
  },
});
