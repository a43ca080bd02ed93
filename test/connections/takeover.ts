import type { ChildProcess } from 'node:child_process';
import { startService, tempDir, useTeardown, type Running } from '../support/helpers.js';
import { freePort } from '../support/net.js';
import { startIntakeChild } from '../support/child.js';
import { useRedis } from '../support/redis.js';
import { REAL_TIME_WINDOW } from '../support/windows.js';

/**
 * Two instances of one connection channel on one real redis-server, for the takeover tests: a
 * `victim` in a child process (so it can be killed with SIGKILL) and a `survivor` in this one,
 * both under one key prefix with a short debounce window. Registers its hooks in the calling
 * test file; everything it started is stopped after each test.
 *
 * The victim is the built library (`createIntake`) with a 2 s flush lease: a flush it has under
 * way when it is killed holds its session that long (30 s by default, past the tests' waits).
 */
export function takeoverInstances() {
  const redis = useRedis();
  const { services, children, cleanups } = useTeardown();
  return {
    /** Run after the test (a fake platform's close). */
    cleanup(fn: () => unknown): void {
      cleanups.push(fn);
    },
    /** An instance in a child process with `channel` as its only channel. */
    async victim(prefix: string, channel: Record<string, unknown>): Promise<ChildProcess> {
      const dir = tempDir();
      cleanups.push(() => dir.remove());
      const child = await startIntakeChild(dir.path, await freePort(), {
        configFile: {
          store: redis.url,
          redis: { keyPrefix: prefix },
          debounce: REAL_TIME_WINDOW,
          logLevel: 'warn',
          channels: [channel],
        },
        flushLeaseMs: 2000,
      });
      children.push(child);
      return child;
    },
    /** An instance in this process on the same store and channel. */
    async survivor(prefix: string, channel: Record<string, unknown>): Promise<Running> {
      const service = await startService({
        store: redis.url,
        redis: { keyPrefix: prefix, commandTimeoutMs: 3000 },
        debounce: REAL_TIME_WINDOW,
        channels: [channel],
      });
      services.push(service);
      return service;
    },
  };
}
