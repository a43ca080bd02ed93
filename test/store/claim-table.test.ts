import { describe, expect, it } from 'vitest';
import { ClaimTable } from '../../src/store/local/claim-table.js';

describe('ClaimTable', () => {
  it('refuses a second claim of a key inside its TTL and admits it again after', () => {
    const table = new ClaimTable(1000, 100);
    expect(table.claim('a', 0)).toBe(true);
    expect(table.claim('a', 999)).toBe(false);
    expect(table.claim('a', 1000)).toBe(true);
    expect(table.claim('a', 1999)).toBe(false);
  });

  it('expires keys in insertion order without touching live ones', () => {
    const table = new ClaimTable(100, 100);
    table.claim('a', 0);
    table.claim('b', 50);
    expect(table.count).toBe(2);
    expect(table.has('a', 100)).toBe(false);
    expect(table.has('b', 100)).toBe(true);
    expect(table.count).toBe(1);
  });

  it('evicts the oldest key past the cap and counts it', () => {
    const table = new ClaimTable(10_000, 3);
    for (const key of ['a', 'b', 'c', 'd']) expect(table.claim(key, 1)).toBe(true);
    expect(table.evicted).toBe(1);
    expect(table.count).toBe(3);
    expect(table.claim('a', 2)).toBe(true);
    expect(table.claim('d', 2)).toBe(false);
  });

  it('keeps working across ring growth and wrap-around', () => {
    const table = new ClaimTable(10, 5000);
    for (let i = 0; i < 20_000; i++) {
      expect(table.claim(`k${i}`, i)).toBe(true);
      expect(table.claim(`k${i}`, i)).toBe(false);
    }
    expect(table.count).toBe(10);
    expect(table.evicted).toBe(0);
  });
});

/** A seeded pseudo-random generator in [0, 1), so a failing run can be replayed. */
function seeded(seed: number): () => number {
  return () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
}

/** What a claim table must answer: a plain Map of key -> expiry, in insertion order. */
class ClaimModel {
  private readonly keys = new Map<string, number>();
  evicted = 0;

  constructor(
    private readonly ttl: number,
    private readonly cap: number,
  ) {}

  get size(): number {
    return this.keys.size;
  }

  has(key: string, now: number): boolean {
    this.expire(now);
    return this.keys.has(key);
  }

  /** Whether a claim of `key` at `now` is new (and then takes it). */
  claim(key: string, now: number): boolean {
    if (this.has(key, now)) return false;
    if (this.keys.size === this.cap) {
      this.keys.delete(this.keys.keys().next().value as string);
      this.evicted++;
    }
    this.keys.set(key, now + this.ttl);
    return true;
  }

  private expire(now: number): void {
    for (const [key, expiry] of this.keys) {
      if (expiry > now) break;
      this.keys.delete(key);
    }
  }
}

describe('ClaimTable index', () => {
  it('agrees with a plain Map model under random claims, expiry and eviction', () => {
    // Small cap and TTL so that growth, wrap-around, eviction and backward-shift deletion all happen.
    const random = seeded(7);
    const table = new ClaimTable(50, 60);
    const model = new ClaimModel(50, 60);
    for (let now = 0; now < 20_000; now += random() < 0.5 ? 0 : 1) {
      const key = `key-${Math.floor(random() * 2000)}`;
      expect(table.claim(key, now)).toBe(model.claim(key, now));
      if (now % 997 === 0) expect(table.count).toBe(model.size);
      if (now > 19_990) break;
    }
    expect(table.evicted).toBe(model.evicted);
    expect(model.evicted).toBeGreaterThan(0);
  });

  it('agrees with the model while its index is rebuilt after a growth, with keys expiring, evicted and claimed again meanwhile', () => {
    // The ring starts at 1,024 slots: these runs grow it (to 2,048 and 4,096) with expiry,
    // eviction and repeated keys all happening during the rebuilds that follow.
    for (const [ttl, cap, space, seed] of [
      [2600, 5000, 6000, 11],
      [1100, 1500, 2500, 23],
      [3000, 2100, 1_000_000, 5],
    ] as const) {
      const random = seeded(seed);
      const table = new ClaimTable(ttl, cap);
      const model = new ClaimModel(ttl, cap);
      let rebuilding = 0;
      for (let step = 0, now = 0; step < 30_000; step++, now += random() < 0.5 ? 0 : 1) {
        const key = `key-${Math.floor(random() * space)}`;
        if (random() < 0.3) {
          expect(table.has(key, now)).toBe(model.has(key, now));
          continue;
        }
        expect(table.claim(key, now)).toBe(model.claim(key, now));
        if (table.pendingRebuild > 0) rebuilding++;
        if (step % 101 === 0) expect(table.count).toBe(model.size);
      }
      expect(table.evicted).toBe(model.evicted);
      // The runs did go through rebuilds.
      expect(rebuilding).toBeGreaterThan(50);
    }
  });

  it('rebuilds its index a few keys per insert after a growth, not all at once', () => {
    const table = new ClaimTable(1_000_000, 1_000_000);
    for (let i = 0; i < 1024; i++) table.claim(`k${i}`, 0);
    expect(table.pendingRebuild).toBe(0);
    table.claim('k1024', 0); // the ring was full: it doubles
    expect(table.pendingRebuild).toBe(1024);
    let previous = table.pendingRebuild;
    let inserts = 0;
    while (table.pendingRebuild > 0) {
      table.claim(`n${inserts++}`, 0);
      expect(previous - table.pendingRebuild).toBeLessThanOrEqual(16);
      previous = table.pendingRebuild;
    }
    expect(inserts).toBe(64);
    // Every key, carried over or new, is still taken.
    for (let i = 0; i <= 1024; i++) expect(table.has(`k${i}`, 1)).toBe(true);
    for (let i = 0; i < inserts; i++) expect(table.has(`n${i}`, 1)).toBe(true);
    expect(table.count).toBe(1025 + inserts);
  });

  it('forgets keys that expire during a rebuild, carried over or not', () => {
    const table = new ClaimTable(100, 1_000_000);
    // 1,024 keys over times 0-51 fill the ring; one more at 52 doubles it.
    for (let i = 0; i < 1024; i++) table.claim(`k${i}`, Math.floor(i / 20));
    table.claim('grew', 52);
    for (let i = 0; i < 10; i++) table.claim(`n${i}`, 60); // carry 160 keys over meanwhile
    expect(table.pendingRebuild).toBe(1024 - 160);
    // At 140 the keys of times 0-39 (k0-k799) have expired; the rebuild had carried k0-k159.
    expect(table.has('k100', 140)).toBe(false);
    expect(table.has('k500', 140)).toBe(false);
    expect(table.has('k900', 140)).toBe(true);
    expect(table.pendingRebuild).toBeGreaterThan(0);
    // At 161 every carried key and those of 52 and 60 have expired: none is taken any more.
    for (const key of ['k0', 'k500', 'k1023', 'grew', 'n0', 'n9']) expect(table.has(key, 161)).toBe(false);
    expect(table.count).toBe(0);
    expect(table.claim('n0', 162)).toBe(true);
    expect(table.claim('k500', 162)).toBe(true);
    expect(table.claim('k500', 163)).toBe(false);
  });

  it('uses a claimKey digest as its 96 bits and still tells digests apart', async () => {
    const { claimKey } = await import('../../src/dedup/claims.js');
    const table = new ClaimTable(1000, 10_000);
    const keys = Array.from({ length: 5000 }, (_, i) => claimKey('id', 'wa', `m${i}`));
    for (const key of keys) expect(table.claim(key, 0)).toBe(true);
    for (const key of keys) expect(table.has(key, 1)).toBe(true);
    expect(table.has(claimKey('id', 'wa', 'other'), 1)).toBe(false);
  });

  it('restores keys with their own expiry', () => {
    const table = new ClaimTable(1000, 10);
    table.restore('a', 500, 100);
    table.restore('b', 90, 100);
    expect(table.has('a', 499)).toBe(true);
    expect(table.has('b', 100)).toBe(false);
    expect(table.has('a', 500)).toBe(false);
  });
});
