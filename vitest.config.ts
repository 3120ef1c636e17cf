import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Multi-process tests spawn their own node processes; two test files at a
    // time match the two cores of the machines we run on.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
