import { digest } from '../digest.js';
import type { ClaimSpec } from './types.js';

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
 * The ring doubles when full, and its index is rebuilt a few entries per insert, not at once:
 * rebuilding it whole held the event loop 17 ms at 131,072 keys, 34 ms at 262,144 and 71 ms
 * at 524,288, once each on the way to a million under steady traffic (and again after every
 * restart). While it is rebuilt, a key not yet in the new index is found in the old one.
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
   * During a rebuild (after a growth): the ring before it and its index, which still find the
   * slots from `rebuilt` up to `carried` (the keys carried over, now at slots 0..carried-1).
   * Old slot `s` is new slot `(s - previous.head) mod previous.capacity`.
   */
  private previous: { words: Uint32Array; index: Int32Array; mask: number; head: number; capacity: number } | undefined;
  private rebuilt = 0;
  private carried = 0;
  /**
   * The arrays of the next growth, made once the ring is half full and written a page or two
   * per insert from then on: a page is only backed by memory when first written, and faulting
   * in a fresh 10 MB ring at the growth itself took 30 ms at 524,288 keys (scratch).
   */
  private next: { words: Uint32Array; expires: Float64Array; index: Int32Array; page: number; pages: number } | undefined;
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

  /** How much of the next growth's memory is written so far, 0 to 1 (0: none made yet). */
  get nextPrepared(): number {
    return this.next ? this.next.page / this.next.pages : 0;
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
    if (this.size * 2 >= this.capacity && this.capacity < this.maxKeys) this.prepare();
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
    let cell = this.cellOf(slot);
    while (this.index[cell] !== 0) cell = (cell + 1) & this.mask;
    this.index[cell] = slot + 1;
  }

  /**
   * The index cell holding `key`, or -1; or, during a rebuild, `FOUND_IN_PREVIOUS` for a live
   * key that only the previous index knows yet.
   */
  private find(key: Uint32Array): number {
    const w0 = key[0] as number;
    const w1 = key[1] as number;
    const w2 = key[2] as number;
    const words = this.words;
    let cell = hashOf(w0, w1, w2) & this.mask;
    for (;;) {
      const entry = this.index[cell] as number;
      if (entry === 0) break;
      const at = (entry - 1) * 3;
      if (words[at] === w0 && words[at + 1] === w1 && words[at + 2] === w2) return cell;
      cell = (cell + 1) & this.mask;
    }
    const previous = this.previous;
    if (!previous) return -1;
    cell = hashOf(w0, w1, w2) & previous.mask;
    for (;;) {
      const entry = previous.index[cell] as number;
      if (entry === 0) return -1;
      const at = (entry - 1) * 3;
      if (previous.words[at] === w0 && previous.words[at + 1] === w1 && previous.words[at + 2] === w2) {
        // Live only if not yet carried into the new index, nor dropped off the ring's head since.
        const slot = (entry - 1 - previous.head + previous.capacity) % previous.capacity;
        return slot >= this.rebuilt && slot >= this.head ? FOUND_IN_PREVIOUS : -1;
      }
      cell = (cell + 1) & previous.mask;
    }
  }

  private cellOf(slot: number): number {
    const at = slot * 3;
    return hashOf(this.words[at] as number, this.words[at + 1] as number, this.words[at + 2] as number) & this.mask;
  }

  private expire(now: number): void {
    while (this.size > 0 && (this.expires[this.head] as number) <= now) this.dropHead();
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
   * Double the ring: its keys are copied in order to slots 0..size-1 (two block copies), and
   * the new index gets only the keys inserted from now on; `rebuildSome` carries the copied
   * ones over a few per insert, and `find` looks in the previous index meanwhile. Every later
   * insert brings REBUILD_STEP more, so the rebuild ends long before the ring is full again.
   */
  private grow(): void {
    if (this.previous) this.rebuildSome(Infinity);
    const capacity = Math.min(this.capacity * 2, this.maxKeys);
    const next = this.next;
    this.next = undefined;
    const words = next?.words ?? new Uint32Array(capacity * 3);
    const expires = next?.expires ?? new Float64Array(capacity);
    // The ring is full: from `head` to the end, then from 0 to `head`.
    const first = this.capacity - this.head;
    words.set(this.words.subarray(this.head * 3), 0);
    words.set(this.words.subarray(0, this.head * 3), first * 3);
    expires.set(this.expires.subarray(this.head), 0);
    expires.set(this.expires.subarray(0, this.head), first);
    this.previous = { words: this.words, index: this.index, mask: this.mask, head: this.head, capacity: this.capacity };
    this.rebuilt = 0;
    this.carried = this.size;
    this.words = words;
    this.expires = expires;
    this.head = 0;
    this.index = next?.index ?? new Int32Array(indexSize(capacity));
    this.mask = this.index.length - 1;
  }

  /**
   * Make the next growth's arrays (at half full) and write a zero into a few more of their
   * pages: all of them by the time the ring is full, at a steady few pages per insert.
   */
  private prepare(): void {
    let next = this.next;
    if (!next) {
      const capacity = Math.min(this.capacity * 2, this.maxKeys);
      const words = new Uint32Array(capacity * 3);
      const expires = new Float64Array(capacity);
      const index = new Int32Array(indexSize(capacity));
      const pages = Math.ceil((words.byteLength + expires.byteLength + index.byteLength) / PAGE_BYTES);
      next = this.next = { words, expires, index, page: 0, pages };
    }
    // The inserts left until the ring is full, at least one.
    const left = Math.max(1, this.capacity - this.size);
    const count = Math.ceil((next.pages - next.page) / left);
    for (let i = 0; i < count && next.page < next.pages; i++, next.page++) touch(next, next.page);
  }

  /** Put up to `count` more carried-over keys into the new index; drop the previous one when done. */
  private rebuildSome(count: number): void {
    const end = Math.min(this.carried, this.rebuilt + count);
    // Slots the head already passed were dropped: nothing to carry.
    for (let slot = Math.max(this.rebuilt, this.head); slot < end; slot++) {
      let cell = this.cellOf(slot);
      while (this.index[cell] !== 0) cell = (cell + 1) & this.mask;
      this.index[cell] = slot + 1;
    }
    this.rebuilt = Math.max(this.rebuilt, end);
    if (this.rebuilt >= this.carried) this.previous = undefined;
  }
}

/** Write a zero into page `page` of the three arrays taken end to end. */
function touch(arrays: { words: Uint32Array; expires: Float64Array; index: Int32Array }, page: number): void {
  let at = page * PAGE_BYTES;
  for (const array of [arrays.words, arrays.expires, arrays.index]) {
    if (at < array.byteLength) {
      array[at / array.BYTES_PER_ELEMENT] = 0;
      return;
    }
    at -= array.byteLength;
  }
}

const PAGE_BYTES = 4096;
/** Carried-over keys put into the new index per insert while it is rebuilt. */
const REBUILD_STEP = 16;
/** `find`: the key is live, and known only to the previous index (no cell of the new one). */
const FOUND_IN_PREVIOUS = -2;

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

  stats(): { keys: number; evicted: number } {
    let keys = 0;
    let evicted = 0;
    for (const byTtl of this.tables.values()) {
      for (const table of byTtl.values()) {
        keys += table.count;
        evicted += table.evicted;
      }
    }
    return { keys, evicted };
  }
}
