import { digest } from '../../core/digest.js';
import type { ClaimSpec, ClaimStats } from '../../core/ports/index.js';

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const SIXBITS = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) SIXBITS[BASE64URL.charCodeAt(i)] = i;

/** The 96 bits of a key, in `out[0..2]`: a 16-character base64url digest (dedup's claim keys) as is, any other string digested first. */
function keyWords(key: string, out: Uint32Array): void {
  if (key.length !== 16 || !decode(key, out)) decode(digest(key), out);
}

function decode(key: string, out: Uint32Array): boolean {
  let w0 = 0;
  let w1 = 0;
  let w2 = 0;
  for (let i = 0; i < 16; i++) {
    const code = key.charCodeAt(i);
    const v = code < 128 ? (SIXBITS[code] as number) : -1;
    if (v < 0) return false;
    // 16 x 6 bits = 96 bits, packed big-end first into three 32-bit words.
    w0 = ((w0 << 6) | (w1 >>> 26)) >>> 0;
    w1 = ((w1 << 6) | (w2 >>> 26)) >>> 0;
    w2 = ((w2 << 6) | v) >>> 0;
  }
  out[0] = w0;
  out[1] = w1;
  out[2] = w2;
  return true;
}

/**
 * Live dedup keys of one TTL. Because every key lives exactly `ttlMs`, insertion order is
 * expiry order: expired keys are dropped from the head of a ring, O(1) amortized per claim,
 * with no timer per key and no scan of the window. Past `maxKeys` the oldest key is evicted
 * early and counted, so memory stays bounded under any load.
 *
 * Everything lives in typed arrays: the ring holds each key's 96 bits and expiry, and an
 * open-addressing index (linear probing, load <= 1/2) maps a key to its ring slot. A live key
 * is no heap object at all, so a million of them cost the garbage collector nothing to trace,
 * and about 28 bytes each.
 *
 * The ring doubles when full, and its keys are carried into the new ring and index a few per
 * insert, not at once: copying and re-indexing them whole held the event loop 17 ms at 131,072
 * keys, 34 ms at 262,144 and 71 ms at 524,288, once each on the way to a million under steady
 * traffic (and again after every restart); 30 ms of the last was page faults on the fresh
 * ring, which now come a page at a time. Meanwhile a key not yet carried over is read from the
 * previous ring and found through the previous index.
 */
export class ClaimTable {
  /** Ring of keys, three 32-bit words per slot, oldest at `head`. */
  private words: Uint32Array;
  private expires: Float64Array;
  private head = 0;
  private size = 0;
  /** Ring slot + 1 per index cell; 0 is an empty cell. */
  private index: Int32Array;
  private mask: number;
  /**
   * During a rebuild (after a growth): the ring before it and its index, which still hold the
   * slots from `rebuilt` up to `carried` (the keys carried over, slots 0..carried-1 of the new
   * ring once copied). New slot `s` is old slot `(s + previous.head) mod previous.capacity`.
   */
  private previous:
    | { words: Uint32Array; expires: Float64Array; index: Int32Array; mask: number; head: number; capacity: number }
    | undefined;
  private rebuilt = 0;
  private carried = 0;
  /** The key being claimed or looked up. */
  private readonly probe = new Uint32Array(3);
  /** The key being dropped (an eviction happens in the middle of inserting `probe`). */
  private readonly dropping = new Uint32Array(3);
  /** Keys dropped before their TTL because the table was full. */
  evicted = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly maxKeys: number,
  ) {
    const initial = Math.min(1024, maxKeys);
    this.words = new Uint32Array(initial * 3);
    this.expires = new Float64Array(initial);
    this.index = new Int32Array(indexSize(initial));
    this.mask = this.index.length - 1;
  }

  /** Take `key` until `now + ttlMs`; false when it is already taken. */
  claim(key: string, now: number): boolean {
    this.expire(now);
    keyWords(key, this.probe);
    if (this.find(this.probe) !== -1) return false;
    this.insert(this.probe, now + this.ttlMs);
    return true;
  }

  /** Whether `key` is taken at `now`. */
  has(key: string, now: number): boolean {
    this.expire(now);
    keyWords(key, this.probe);
    return this.find(this.probe) !== -1;
  }

  /** Put back a key recorded by an earlier run, with its original expiry (oldest first). */
  restore(key: string, expiresAt: number, now: number): void {
    if (expiresAt <= now || this.has(key, now)) return;
    this.insert(this.probe, expiresAt); // has() left the key's words in `probe`
  }

  get count(): number {
    return this.size;
  }

  /** Keys carried over by the last growth and not yet in the new index (0: no rebuild under way). */
  get pendingRebuild(): number {
    return this.previous ? this.carried - this.rebuilt : 0;
  }

  private get capacity(): number {
    return this.expires.length;
  }

  private insert(key: Uint32Array, expiresAt: number): void {
    if (this.previous) this.rebuildSome(REBUILD_STEP);
    if (this.size === this.maxKeys) {
      this.dropHead();
      this.evicted++;
    }
    if (this.size === this.capacity) this.grow();
    const slot = (this.head + this.size) % this.capacity;
    this.words[slot * 3] = key[0] as number;
    this.words[slot * 3 + 1] = key[1] as number;
    this.words[slot * 3 + 2] = key[2] as number;
    this.expires[slot] = expiresAt;
    this.size++;
    this.indexSlot(slot);
  }

  /**
   * The index cell holding `key`, or -1; or, during a rebuild, `FOUND_IN_PREVIOUS` for a live
   * key that only the previous index knows yet.
   */
  private find(key: Uint32Array): number {
    const cell = lookup(this.index, this.mask, this.words, key);
    const previous = this.previous;
    if (cell !== -1 || !previous) return cell;
    const old = lookup(previous.index, previous.mask, previous.words, key);
    if (old === -1) return -1;
    // Live only if not yet carried into the new index, nor dropped off the ring's head since.
    const slot = ((previous.index[old] as number) - 1 - previous.head + previous.capacity) % previous.capacity;
    return slot >= this.rebuilt && slot >= this.head ? FOUND_IN_PREVIOUS : -1;
  }

  /** Put a slot's key into the index (linear probing to the first empty cell). */
  private indexSlot(slot: number): void {
    let cell = this.cellOf(slot);
    while (this.index[cell] !== 0) cell = (cell + 1) & this.mask;
    this.index[cell] = slot + 1;
  }

  private cellOf(slot: number): number {
    const at = slot * 3;
    return hashOf(this.words[at] as number, this.words[at + 1] as number, this.words[at + 2] as number) & this.mask;
  }

  private expire(now: number): void {
    while (this.size > 0 && this.expiryOf(this.head) <= now) this.dropHead();
  }

  /** The expiry of a live slot: in the previous ring while it is not carried over yet. */
  private expiryOf(slot: number): number {
    const previous = this.previous;
    if (previous && slot >= this.rebuilt && slot < this.carried)
      return previous.expires[(slot + previous.head) % previous.capacity] as number;
    return this.expires[slot] as number;
  }

  private dropHead(): void {
    // A carried-over slot the rebuild has not reached is in the previous index only, and goes
    // stale there by the head passing it (see `find`).
    if (!this.previous || this.head < this.rebuilt || this.head >= this.carried) {
      const at = this.head * 3;
      this.dropping[0] = this.words[at] as number;
      this.dropping[1] = this.words[at + 1] as number;
      this.dropping[2] = this.words[at + 2] as number;
      const cell = this.find(this.dropping);
      if (cell >= 0) this.remove(cell);
    }
    this.head = (this.head + 1) % this.capacity;
    this.size--;
  }

  /** Empty an index cell, shifting later cells of its probe run back (no tombstones). */
  private remove(cell: number): void {
    const index = this.index;
    const mask = this.mask;
    let hole = cell;
    let next = cell;
    for (;;) {
      next = (next + 1) & mask;
      const entry = index[next] as number;
      if (entry === 0) break;
      const home = this.cellOf(entry - 1);
      // Move the entry into the hole unless its home lies cyclically in (hole, next].
      const stays = hole <= next ? home > hole && home <= next : home > hole || home <= next;
      if (!stays) {
        index[hole] = entry;
        hole = next;
      }
    }
    index[hole] = 0;
  }

  /**
   * Double the ring. The new ring and index start empty but for the keys inserted from now on;
   * `rebuildSome` copies the carried-over keys to slots 0..size-1 (in ring order) and indexes
   * them a few per insert, and `find` and `expiryOf` read the previous ring meanwhile. Every
   * later insert carries REBUILD_STEP more, so the rebuild ends long before the ring is full
   * again. Fresh memory is only backed when written: copied at once, it faulted in 10 MB on
   * the way to 524,288 keys, 30 ms here.
   */
  private grow(): void {
    if (this.previous) this.rebuildSome(Infinity);
    const capacity = Math.min(this.capacity * 2, this.maxKeys);
    this.previous = {
      words: this.words,
      expires: this.expires,
      index: this.index,
      mask: this.mask,
      head: this.head,
      capacity: this.capacity,
    };
    this.rebuilt = 0;
    this.carried = this.size;
    this.words = new Uint32Array(capacity * 3);
    this.expires = new Float64Array(capacity);
    this.head = 0;
    this.index = new Int32Array(indexSize(capacity));
    this.mask = this.index.length - 1;
  }

  /** Carry up to `count` more keys into the new ring and index; drop the previous ones when done. */
  private rebuildSome(count: number): void {
    const previous = this.previous as NonNullable<ClaimTable['previous']>;
    // Slots the head already passed were dropped: nothing to carry.
    const start = Math.max(this.rebuilt, this.head);
    const end = Math.min(this.carried, start + count);
    for (let slot = start; slot < end; slot++) {
      const from = (slot + previous.head) % previous.capacity;
      this.words[slot * 3] = previous.words[from * 3] as number;
      this.words[slot * 3 + 1] = previous.words[from * 3 + 1] as number;
      this.words[slot * 3 + 2] = previous.words[from * 3 + 2] as number;
      this.expires[slot] = previous.expires[from] as number;
      this.indexSlot(slot);
    }
    this.rebuilt = end;
    if (this.rebuilt >= this.carried) this.previous = undefined;
  }
}

/** Carried-over keys put into the new index per insert while it is rebuilt. */
const REBUILD_STEP = 16;
/** `find`: the key is live, and known only to the previous index (no cell of the new one). */
const FOUND_IN_PREVIOUS = -2;

/** The cell of `index` holding `key` (its slot's words in `words`), or -1. */
function lookup(index: Int32Array, mask: number, words: Uint32Array, key: Uint32Array): number {
  const w0 = key[0] as number;
  const w1 = key[1] as number;
  const w2 = key[2] as number;
  let cell = hashOf(w0, w1, w2) & mask;
  for (;;) {
    const entry = index[cell] as number;
    if (entry === 0) return -1;
    const at = (entry - 1) * 3;
    if (words[at] === w0 && words[at + 1] === w1 && words[at + 2] === w2) return cell;
    cell = (cell + 1) & mask;
  }
}

/** Index cells for a ring of `capacity`: a power of two, at least twice the capacity. */
function indexSize(capacity: number): number {
  let size = 2;
  while (size < capacity * 2) size *= 2;
  return size;
}

function hashOf(w0: number, w1: number, w2: number): number {
  const h = Math.imul(w0 ^ Math.imul(w1, 0x85ebca6b) ^ Math.imul(w2, 0xc2b2ae35), 0x9e3779b1);
  return (h ^ (h >>> 15)) >>> 0;
}

/** The claim tables of a store, one per (space, TTL), so each table's expiry stays FIFO. */
export class ClaimTables {
  /** space -> TTL -> table (two lookups, no key string built per claim). */
  private readonly tables = new Map<string, Map<number, ClaimTable>>();

  table(claim: Pick<ClaimSpec, 'space' | 'ttlMs' | 'maxKeys'>): ClaimTable {
    let byTtl = this.tables.get(claim.space);
    if (!byTtl) this.tables.set(claim.space, (byTtl = new Map()));
    let table = byTtl.get(claim.ttlMs);
    if (!table) byTtl.set(claim.ttlMs, (table = new ClaimTable(claim.ttlMs, claim.maxKeys)));
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

  stats(): ClaimStats {
    let keys = 0;
    let evicted = 0;
    const evictedBySpace: Record<string, number> = {};
    for (const [space, byTtl] of this.tables) {
      for (const table of byTtl.values()) {
        keys += table.count;
        evicted += table.evicted;
        if (table.evicted > 0) evictedBySpace[space] = (evictedBySpace[space] ?? 0) + table.evicted;
      }
    }
    return { keys, evicted, evictedBySpace };
  }
}
