/**
 * A map of at most `max` keys that lets go of the oldest (the first set) when a new key would
 * pass the bound, in constant time.
 *
 * Not `map.delete(map.keys().next().value)` on a plain Map: V8 leaves a deleted entry in the
 * Map's table until the table is rebuilt, and every new iterator starts at the front and steps
 * over each of them, so dropping the oldest key on every insert pays again for every deletion
 * since the last rebuild: tens of µs per insert at 50,000 keys, where the insert alone is under
 * one. The order of the keys is kept in a ring beside the Map instead.
 */
export class RecentMap<K, V> {
  private readonly entries = new Map<K, V>();
  /** The keys in the order they were first set: the oldest at `oldest` once the ring is full. */
  private readonly ring: K[] = [];
  private oldest = 0;

  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1)
      throw new RangeError(`RecentMap max must be a whole number >= 1, got ${max}`);
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  /** Set `key`: a key set again keeps its place in the order; a new one past `max` lets go of the oldest. */
  set(key: K, value: V): void {
    if (!this.entries.has(key)) {
      if (this.ring.length < this.max) this.ring.push(key);
      else {
        this.entries.delete(this.ring[this.oldest] as K);
        this.ring[this.oldest] = key;
        this.oldest = this.oldest + 1 === this.max ? 0 : this.oldest + 1;
      }
    }
    this.entries.set(key, value);
  }
}
