/**
 * Live dedup keys of one TTL. Because every key lives exactly `ttlMs`, insertion order is
 * expiry order: expired keys are dropped from the head of a ring, O(1) amortized per claim,
 * with no timer per key and no scan of the window. Past `maxKeys` the oldest key is evicted
 * early and counted, so memory stays bounded under any load.
 */
export class ClaimTable {
  private readonly live = new Set<string>();
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
    this.expire(now);
    if (this.live.has(key)) return false;
    if (this.size === this.maxKeys) {
      this.dropHead();
      this.evicted++;
    }
    if (this.size === this.keys.length) this.grow();
    const slot = (this.head + this.size) % this.keys.length;
    this.keys[slot] = key;
    this.expires[slot] = now + this.ttlMs;
    this.size++;
    this.live.add(key);
    return true;
  }

  /** Whether `key` is taken at `now`. */
  has(key: string, now: number): boolean {
    this.expire(now);
    return this.live.has(key);
  }

  get count(): number {
    return this.size;
  }

  private expire(now: number): void {
    while (this.size > 0 && (this.expires[this.head] as number) <= now) this.dropHead();
  }

  private dropHead(): void {
    this.live.delete(this.keys[this.head] as string);
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
