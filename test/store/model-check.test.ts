import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/local/memory.js';
import { RedisStore } from '../../src/store/redis/redis.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { tempDir } from '../support/helpers.js';
import { type Covered, describeViolation, modelCheck, type Violation } from './model-check.js';
import { useRedis } from '../support/redis.js';
import { clusterForTests } from './redis-cluster.js';
import { openStore } from '../../src/store/index.js';

/** Zero violations, or the first one with its op log (replay it with `replaySeed`). */
function report(violations: readonly Violation[]): string {
  const [first] = violations;
  if (!first) return 'no violations';
  const kinds = [...new Set(violations.map((v) => `${v.kind} (seed ${v.seed})`))].slice(0, 10).join(', ');
  return `${violations.length} violations: ${kinds}\nfirst: ${describeViolation(first)}\n`;
}

/** The things of `wanted` the sequences reached fewer than 3 times, with their counts. */
function reached(coverage: ReadonlyMap<Covered, number>, wanted: readonly Covered[]): string[] {
  return wanted.filter((what) => (coverage.get(what) ?? 0) < 3).map((what) => `${what}: ${coverage.get(what) ?? 0}`);
}

describe('store model check', () => {
  const cleanup: Array<() => unknown> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('memory: 300 random sequences keep the model', async () => {
    const coverage = new Map<Covered, number>();
    const violations = await modelCheck({ open: async () => new MemoryStore() }, 300, 1, { coverage });
    expect(violations.length, report(violations)).toBe(0);
    // Zero violations means something only if the sequences reached what they check.
    expect(
      reached(coverage, ['commit', 'merged-commit', 'stale-commit-refused', 'takeover', 'shutdown-claim']),
    ).toEqual([]);
  }, 180_000);

  it('sqlite: 30 random sequences with restarts and failed writes keep the model', async () => {
    const coverage = new Map<Covered, number>();
    const open = (path: string, now: number): SqliteStore => {
      const store = new SqliteStore(path, { now });
      cleanup.push(() => store.close().catch(() => undefined));
      return store;
    };
    const violations = await modelCheck(
      {
        open: async () => {
          const dir = tempDir('model-check-');
          cleanup.push(() => dir.remove());
          return open(join(dir.path, 'store.db'), 0);
        },
        reopen: async (store, now, viaOpen) => {
          await store.close();
          const path = (store as SqliteStore).path;
          if (!viaOpen) return open(path, now);
          const again = await SqliteStore.open(path, { now });
          cleanup.push(() => again.close().catch(() => undefined));
          return again;
        },
      },
      30,
      1,
      { coverage },
    );
    expect(violations.length, report(violations)).toBe(0);
    expect(
      reached(coverage, [
        'commit',
        'merged-commit',
        'stale-commit-refused',
        'takeover',
        'shutdown-claim',
        'restart',
        'failed-write',
        'duplicate-id-refused',
      ]),
    ).toEqual([]);
  }, 180_000);

  describe('on a real redis-server', () => {
    const server = useRedis();

    it('redis: 200 random sequences keep the model', async () => {
      const coverage = new Map<Covered, number>();
      let opened = 0;
      const violations = await modelCheck(
        {
          // A fresh store per sequence (and per shrink replay) under its own keys; the run closes it.
          open: () =>
            RedisStore.open(server.url, {
              keyPrefix: `model-check-${++opened}`,
              commandTimeoutMs: 3000,
              clock: 'caller',
            }),
          // Several instances share it: no shutdown flush; arrivals carry the server's clock, and the
          // 30 s a buffer given back holds its session are real time.
          shared: true,
          clock: Date.now,
          timeScale: 10,
          releaseHoldMs: 30_000,
        },
        200,
        1,
        { coverage },
      );
      expect(violations.length, report(violations)).toBe(0);
      // No restarts, injected write failures or shutdown claims on a shared store; the sessions
      // held past the 30 s by buffers given back are what the 40 s jumps are for.
      expect(
        reached(coverage, ['commit', 'merged-commit', 'stale-commit-refused', 'takeover', 'hold-ran-out']),
      ).toEqual([]);
    }, 180_000);
  });

  describe('on a real 3-master Redis Cluster (the sharded store)', () => {
    const cluster = clusterForTests();

    it('redis-cluster: 80 random sequences keep the model', async () => {
      const coverage = new Map<Covered, number>();
      let opened = 0;
      const violations = await modelCheck(
        {
          // As on one Redis; the sessions of a sequence fall on different shards, and each commit
          // goes through its shard's outbox to the global one.
          open: () =>
            openStore(cluster().url, undefined, {
              keyPrefix: `mc-${++opened}`,
              commandTimeoutMs: 3000,
              clock: 'caller',
            }),
          shared: true,
          clock: Date.now,
          timeScale: 10,
          releaseHoldMs: 30_000,
        },
        80,
        1,
        { coverage },
      );
      expect(violations.length, report(violations)).toBe(0);
      expect(
        reached(coverage, ['commit', 'merged-commit', 'stale-commit-refused', 'takeover', 'hold-ran-out']),
      ).toEqual([]);
    }, 90_000);
  });
});
