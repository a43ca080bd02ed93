import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/core/ports/index.js';
import { openStore } from '../../src/store/index.js';
import { MemoryStore } from '../../src/store/local/memory.js';
import { RedisStore } from '../../src/store/redis/redis.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { tempDir } from '../support/helpers.js';
import { useRedis } from '../support/redis.js';
import { type ClaimsCovered, claimsModelCheck, type ClaimsViolation } from './claims-model-check.js';
import { clusterForTests } from './redis-cluster.js';

/** Zero violations, or the first with its op log. */
function report(violations: readonly ClaimsViolation[]): string {
  const [first] = violations;
  if (!first) return 'no violations';
  return `${violations.length} violations; first (seed ${first.seed}): ${first.message}\n${first.log.join('\n')}`;
}

/** What the sequences reached fewer than 3 times. */
function missed(covered: ReadonlyMap<ClaimsCovered, number>, wanted: readonly ClaimsCovered[]): string[] {
  return wanted.filter((what) => (covered.get(what) ?? 0) < 3).map((what) => `${what}: ${covered.get(what) ?? 0}`);
}

const everyRun: ClaimsCovered[] = [
  'claim',
  'two-claims-at-once',
  'expired',
  'ack',
  'ack-lost',
  'nack',
  'dead',
  'past-max-attempts',
  'extend',
  'extend-lost',
  'claim-of',
];

/** A store on Redis under a key prefix of its own per sequence, reopened on the same keys. */
function onRedis(open: (keyPrefix: string) => Promise<Store>) {
  let opened = 0;
  const prefixes = new WeakMap<Store, string>();
  const named = async (keyPrefix: string): Promise<Store> => {
    const store = await open(keyPrefix);
    prefixes.set(store, keyPrefix);
    return store;
  };
  return {
    open: () => named(`claims-model-${++opened}`),
    async reopen(store: Store) {
      await store.close();
      return named(prefixes.get(store) as string);
    },
    keepsLeases: true,
  };
}

describe('claims model check', () => {
  const cleanup: Array<() => unknown> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('memory: 300 random sequences of commits, claims by three workers, acks, nacks, extends and lost leases keep the model', async () => {
    const covered = new Map<ClaimsCovered, number>();
    const violations = await claimsModelCheck({ open: async () => new MemoryStore() }, 300, 60, covered);
    expect(violations.length, report(violations)).toBe(0);
    expect(missed(covered, everyRun)).toEqual([]);
  }, 180_000);

  it('sqlite: 20 random sequences with restarts (which end every lease) keep the model', async () => {
    const covered = new Map<ClaimsCovered, number>();
    const open = (path: string, now: number): SqliteStore => {
      const store = new SqliteStore(path, { now });
      cleanup.push(() => store.close().catch(() => undefined));
      return store;
    };
    const violations = await claimsModelCheck(
      {
        open: async () => {
          const dir = tempDir('claims-model-');
          cleanup.push(() => dir.remove());
          return open(join(dir.path, 'store.db'), 0);
        },
        reopen: async (store, now) => {
          await store.close();
          return open((store as SqliteStore).path, now);
        },
      },
      20,
      60,
      covered,
    );
    expect(violations.length, report(violations)).toBe(0);
    expect(missed(covered, [...everyRun, 'restart'])).toEqual([]);
  }, 180_000);

  describe('on a real redis-server', () => {
    const server = useRedis();

    it('redis: 100 random sequences with the store reopened (leases kept) keep the model', async () => {
      const covered = new Map<ClaimsCovered, number>();
      const subject = onRedis((keyPrefix) =>
        RedisStore.open(server.url, { keyPrefix, commandTimeoutMs: 3000, clock: 'caller' }),
      );
      const violations = await claimsModelCheck(subject, 100, 60, covered);
      expect(violations.length, report(violations)).toBe(0);
      expect(missed(covered, [...everyRun, 'restart'])).toEqual([]);
    }, 180_000);
  });

  describe('on a real 3-master Redis Cluster (the sharded store)', () => {
    const cluster = clusterForTests();

    it('redis-cluster: 30 random sequences, sessions on different shards, keep the model', async () => {
      const covered = new Map<ClaimsCovered, number>();
      const subject = onRedis((keyPrefix) =>
        openStore(cluster().url, undefined, { keyPrefix, commandTimeoutMs: 3000, clock: 'caller' }),
      );
      const violations = await claimsModelCheck(subject, 30, 60, covered);
      expect(violations.length, report(violations)).toBe(0);
      expect(missed(covered, [...everyRun, 'restart'])).toEqual([]);
    }, 90_000);
  });
});
