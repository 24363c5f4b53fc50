import { defineConfig } from 'vitest/config';

// One test file at a time in one worker: the machine is small and each file
// starts its own broker process.
export default defineConfig({
  test: {
    include: ['test/*.test.mjs'],
    fileParallelism: false,
    pool: 'forks',
    poolOptions: { forks: { singleFork: true } },
    testTimeout: 60000,
    hookTimeout: 40000,
  },
});
