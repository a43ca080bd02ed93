import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/local/memory.js';
import { RedisStore } from '../../src/store/redis/redis.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { tempDir } from '../support/helpers.js';
import { useRedis } from '../support/redis.js';
import { type RevisionCovered, revisionModelCheck, type RevisionViolation } from './model-check.js';

function report(violations: readonly RevisionViolation[]): string {
  const [first] = violations;
  if (!first) return 'no violations';
  return `${violations.length} violations; first (seed ${first.seed}): ${first.message}\n${first.log.join('\n')}`;
}

const wanted: RevisionCovered[] = ['recalled-waiting', 'recalled-leased', 'recalled-early', 'edited', 'stale', 'held'];
/** What the sequences reached fewer than `times` times (zero violations mean something only if they reached these). */
const missed = (covered: ReadonlyMap<RevisionCovered, number>, times = 3) =>
  wanted.filter((what) => (covered.get(what) ?? 0) < times).map((what) => `${what}: ${covered.get(what) ?? 0}`);

describe('recalls and edits model check', () => {
  const cleanup: Array<() => unknown> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('memory: 200 random sequences never emit a message after its recall, emit each edit as last recorded, and lose or double nothing', async () => {
    const covered = new Map<RevisionCovered, number>();
    const violations = await revisionModelCheck(async () => new MemoryStore(), 200, 60, covered);
    expect(violations.length, report(violations)).toBe(0);
    expect(missed(covered)).toEqual([]);
  }, 180_000);

  it('sqlite: 60 random sequences keep the same rules', async () => {
    const covered = new Map<RevisionCovered, number>();
    const violations = await revisionModelCheck(
      async () => {
        const dir = tempDir('revise-model-');
        cleanup.push(() => dir.remove());
        return new SqliteStore(join(dir.path, 'store.db'), { now: 0 });
      },
      60,
      60,
      covered,
    );
    expect(violations.length, report(violations)).toBe(0);
    // Fewer sequences (each a file): each case reached at least once.
    expect(missed(covered, 1)).toEqual([]);
  }, 180_000);

  describe('on a real redis-server', () => {
    const server = useRedis();
    it('redis: 150 random sequences keep the same rules', async () => {
      const covered = new Map<RevisionCovered, number>();
      let opened = 0;
      const violations = await revisionModelCheck(
        () =>
          RedisStore.open(server.url, {
            keyPrefix: `revise-model-${++opened}`,
            commandTimeoutMs: 3000,
            clock: 'caller',
          }),
        150,
        60,
        covered,
      );
      expect(violations.length, report(violations)).toBe(0);
      expect(missed(covered)).toEqual([]);
    }, 180_000);
  });
});
