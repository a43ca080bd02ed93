import type { SharedValues } from '../core/ports/index.js';
import { RecentMap } from '../core/recent.js';

/**
 * Where the ids of emitted messages are remembered, so a later recall or edit finds its output:
 * in the store for a store several instances share (any instance may hear the recall); in this
 * process for a store of one process, where a write per emitted message would cost more than the
 * message itself (SQLite: a row per id, bench/pipeline.mjs with BENCH_REVISIONS).
 */
export interface Ledger {
  /** `outputId`: the output whose message ids these are, remembered before its commit. */
  put(
    entries: ReadonlyArray<readonly [key: string, value: string]>,
    ttlMs: number,
    now: number,
    outputId: string,
  ): Promise<void> | void;
  get(key: string, now: number): Promise<string | undefined> | string | undefined;
}

/**
 * The store's shared values, one key per id, each with its time to live: written in the
 * output's own commit where the store can (`putWithCommit`, in step: the commit follows at
 * once), else one `sharedPut` each before it.
 */
export function sharedLedger(store: Pick<SharedValues, 'sharedGet' | 'sharedPut' | 'putWithCommit'>): Ledger {
  return {
    put(entries, ttlMs, now, outputId) {
      if (store.putWithCommit) return store.putWithCommit(outputId, entries, ttlMs);
      return Promise.all(entries.map(([key, value]) => store.sharedPut(key, value, ttlMs, now))).then(() => undefined);
    },
    get: (key, now) => store.sharedGet(key, now),
  };
}

/**
 * This process's: the newest `max` ids, each for its time to live (a restart forgets them). The
 * oldest written first go: the ids of messages long answered before any recent one.
 */
export function localLedger(max: number): Ledger {
  const kept = new RecentMap<string, { value: string; until: number }>(max);
  return {
    put(entries, ttlMs, now) {
      for (const [key, value] of entries) kept.set(key, { value, until: now + ttlMs });
    },
    get(key, now) {
      const entry = kept.get(key);
      return entry && entry.until > now ? entry.value : undefined;
    },
  };
}
