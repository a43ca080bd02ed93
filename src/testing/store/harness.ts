import { afterEach } from 'vitest';
import type { OutboxDraft, OutboxRecord, Store } from '../../core/ports/index.js';
import { item } from './fixtures.js';

/** Opens a fresh, empty store. */
export type OpenStore = () => Promise<Store>;
/** Closes a durable store and opens the same state again, as a restart would. */
export type ReopenStore = (store: Store) => Promise<Store>;

/** The stores of one contract run: every store `fresh` or `restart` gives is closed after its test. */
export interface StoreHarness {
  /** A fresh, empty store, closed after the test. */
  fresh(): Promise<Store>;
  /** The same state again after a restart, closed after the test (only when the run has `reopen`). */
  restart(store: Store): Promise<Store>;
  /** A fresh store the test closes itself. */
  open: OpenStore;
}

/** Call inside a `describe`: registers the `afterEach` that closes what the tests opened. */
export function storeHarness(open: OpenStore, reopen?: ReopenStore): StoreHarness {
  let stores: Store[] = [];
  afterEach(async () => {
    for (const store of stores) await store.close().catch(() => undefined);
    stores = [];
  });
  return {
    open,
    async fresh() {
      const store = await open();
      stores.push(store);
      return store;
    },
    async restart(store) {
      if (!reopen) throw new Error('this contract run has no reopen: the restart tests are for durable stores');
      const again = await reopen(store);
      stores.push(again);
      return again;
    },
  };
}

/** Commit one single-part batch per draft, in order; returns each draft's seq by id. */
export async function commitAll(store: Store, drafts: OutboxDraft[], now = 0): Promise<Map<string, number>> {
  const seqs = new Map<string, number>();
  for (const d of drafts) {
    await store.admit([item(d.id, { sessionKey: `batch:${d.id}`, at: now, closeNow: true })], now);
    const [batch] = await store.claimDue(now, 100, 1);
    const record = (await store.commit(batch as NonNullable<typeof batch>, d, now)) as OutboxRecord;
    seqs.set(d.id, record.seq);
  }
  return seqs;
}
