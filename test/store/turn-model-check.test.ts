import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/core/ports/index.js';
import { MemoryStore } from '../../src/store/local/memory.js';
import { RedisStore } from '../../src/store/redis/redis.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { tempDir } from '../support/helpers.js';
import { useRedis } from '../support/redis.js';
import { type TurnCovered, turnModelCheck, type TurnViolation } from './turn-model-check.js';

/** Zero violations, or the first with its op log. */
function report(violations: readonly TurnViolation[]): string {
  const [first] = violations;
  if (!first) return 'no violations';
  return `${violations.length} violations; first (seed ${first.seed}) ${first.kind}: ${first.message}\n${first.log.join('\n')}`;
}

/** What the sequences reached fewer than 3 times. */
function missed(covered: ReadonlyMap<TurnCovered, number>, wanted: readonly TurnCovered[]): string[] {
  return wanted.filter((what) => (covered.get(what) ?? 0) < 3).map((what) => `${what}: ${covered.get(what) ?? 0}`);
}

const everyRun: TurnCovered[] = [
  'held',
  'released',
  'done',
  'done-again',
  'expired',
  'max-held',
  'stale-commit',
  'during',
  'interrupts',
];
/** The scripted interleaving runs once per mode that holds (collect, followup). */
const scripted = (covered: ReadonlyMap<TurnCovered, number>) => covered.get('late-arrival');

describe('agent turns model check', () => {
  const cleanup: Array<() => unknown> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it("memory: a message arriving while the held messages' release is in flight, and 200 random sequences, emit every message once, in order", async () => {
    const covered = new Map<TurnCovered, number>();
    const violations = await turnModelCheck({ open: async () => new MemoryStore() }, 200, 40, covered);
    expect(violations.length, report(violations)).toBe(0);
    expect(missed(covered, everyRun)).toEqual([]);
    expect(scripted(covered)).toBe(2);
  }, 180_000);

  it("sqlite: a message arriving while the held messages' release is in flight, and 40 random sequences with restarts (and modes changed by them) emit every message once, in order", async () => {
    const covered = new Map<TurnCovered, number>();
    const open = (path: string, now: number): SqliteStore => {
      const store = new SqliteStore(path, { now });
      cleanup.push(() => store.close().catch(() => undefined));
      return store;
    };
    const violations = await turnModelCheck(
      {
        open: async () => {
          const dir = tempDir('turn-model-');
          cleanup.push(() => dir.remove());
          return open(join(dir.path, 'store.db'), 0);
        },
        reopen: async (store, now) => {
          await store.close();
          return open((store as SqliteStore).path, now);
        },
      },
      40,
      40,
      covered,
    );
    expect(violations.length, report(violations)).toBe(0);
    expect(missed(covered, [...everyRun, 'restart', 'mode-change', 'held-while-off'])).toEqual([]);
    expect(scripted(covered)).toBe(2);
  }, 180_000);

  describe('on a real redis-server', () => {
    const server = useRedis();

    it("redis: a message arriving while the held messages' release is in flight, and 100 random sequences with restarts (the store reopened, modes changed by them) emit every message once, in order", async () => {
      const covered = new Map<TurnCovered, number>();
      let opened = 0;
      const prefixes = new WeakMap<Store, string>();
      const open = async (keyPrefix: string): Promise<Store> => {
        const store = await RedisStore.open(server.url, { keyPrefix, commandTimeoutMs: 3000, clock: 'caller' });
        prefixes.set(store, keyPrefix);
        return store;
      };
      const violations = await turnModelCheck(
        {
          open: () => open(`turn-model-${++opened}`),
          reopen: async (store) => {
            await store.close();
            return open(prefixes.get(store) as string);
          },
        },
        100,
        40,
        covered,
      );
      expect(violations.length, report(violations)).toBe(0);
      expect(missed(covered, [...everyRun, 'restart', 'mode-change', 'held-while-off'])).toEqual([]);
      expect(scripted(covered)).toBe(2);
    }, 180_000);
  });
});
