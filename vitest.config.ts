import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Most test files mostly wait (on child processes, redis-server, chromium, short real
    // windows), so one more file runs at once than there are cores (Vitest's default is one
    // fewer: on 2 cores, one file at a time). On 2 cores, test/connections, test/store and
    // test/http took 104.6 s with 2 workers, 80.3 s with 3 and 70.2 s with 4.
    maxWorkers: availableParallelism() + 1,
  },
});
