import type { ClaimSpec } from './types.js';

/**
 * Live dedup keys of one TTL. Because every key lives exactly `ttlMs`, insertion order is
 * expiry order: expired keys are dropped from the head of a ring, O(1) amortized per claim,
 * with no timer per key and no scan of the window. Past `maxKeys` the oldest key is evicted
 * early and counted, so memory stays bounded under any load.
 */
export class ClaimTable {
  /** Key -> its expiry; a ring slot only deletes the key if the expiry is still its own. */
  private readonly live = new Map<string, number>();
  private keys: Array<string | undefined>;
  private expires: Float64Array;
  private head = 0;
  private size = 0;
  /** Keys dropped before their TTL because the table was full. */
  evicted = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly maxKeys: number,
  ) {
    const initial = Math.min(1024, maxKeys);
    this.keys = new Array<string | undefined>(initial);
    this.expires = new Float64Array(initial);
  }

  /** Take `key` until `now + ttlMs`; false when it is already taken. */
  claim(key: string, now: number): boolean {
    if (this.has(key, now)) return false;
    this.insert(key, now + this.ttlMs);
    return true;
  }

  /** Whether `key` is taken at `now`. */
  has(key: string, now: number): boolean {
    this.expire(now);
    return this.live.has(key);
  }

  /** Put back a key recorded by an earlier run, with its original expiry (oldest first). */
  restore(key: string, expiresAt: number, now: number): void {
    if (expiresAt > now && !this.has(key, now)) this.insert(key, expiresAt);
  }

  get count(): number {
    return this.live.size;
  }

  private insert(key: string, expiresAt: number): void {
    if (this.size === this.maxKeys) {
      this.dropHead();
      this.evicted++;
    }
    if (this.size === this.keys.length) this.grow();
    const slot = (this.head + this.size) % this.keys.length;
    this.keys[slot] = key;
    this.expires[slot] = expiresAt;
    this.size++;
    this.live.set(key, expiresAt);
  }

  private expire(now: number): void {
    while (this.size > 0 && (this.expires[this.head] as number) <= now) this.dropHead();
  }

  private dropHead(): void {
    const key = this.keys[this.head] as string;
    if (this.live.get(key) === this.expires[this.head]) this.live.delete(key);
    this.keys[this.head] = undefined;
    this.head = (this.head + 1) % this.keys.length;
    this.size--;
  }

  private grow(): void {
    const capacity = Math.min(this.keys.length * 2, this.maxKeys);
    const keys = new Array<string | undefined>(capacity);
    const expires = new Float64Array(capacity);
    for (let i = 0; i < this.size; i++) {
      const from = (this.head + i) % this.keys.length;
      keys[i] = this.keys[from];
      expires[i] = this.expires[from] as number;
    }
    this.keys = keys;
    this.expires = expires;
    this.head = 0;
  }
}

/** The claim tables of a store, one per (space, TTL), so each table's expiry stays FIFO. */
export class ClaimTables {
  private readonly tables = new Map<string, ClaimTable>();

  table(claim: Pick<ClaimSpec, 'space' | 'ttlMs' | 'maxKeys'>): ClaimTable {
    const name = `${claim.space}|${claim.ttlMs}`;
    let table = this.tables.get(name);
    if (!table) {
      table = new ClaimTable(claim.ttlMs, claim.maxKeys);
      this.tables.set(name, table);
    }
    return table;
  }

  /** Claim each in order; the index of the first already taken, or -1 when all were new. */
  claimAll(claims: readonly ClaimSpec[], now: number): number {
    for (let i = 0; i < claims.length; i++) {
      const claim = claims[i] as ClaimSpec;
      if (!this.table(claim).claim(claim.key, now)) return i;
    }
    return -1;
  }

  stats(): { keys: number; evicted: number } {
    let keys = 0;
    let evicted = 0;
    for (const table of this.tables.values()) {
      keys += table.count;
      evicted += table.evicted;
    }
    return { keys, evicted };
  }
}
