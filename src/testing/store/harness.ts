import { afterEach } from 'vitest';
import type { OutboxDraft, OutboxRecord, Store } from '../../core/ports/index.js';
import { item } from './fixtures.js';

/** Opens a fresh, empty store. */
export type OpenStore = () => Promise<Store>;
/** Closes a durable store and opens the same state again, as a restart would. */
export type ReopenStore = (store: Store) => Promise<Store>;

/** How a contract run drives its stores. */
export interface ContractOptions {
  /** Closes a durable store and opens the same state again: with it, the restart tests run too. */
  reopen?: ReopenStore;
  /**
   * The store is one several instances share (`Store.shared`, Redis): the shutdown cases are left
   * out (`claimDue(Infinity)` is the shutdown of a store no one else shares), and so are the
   * claim and group counts (a shared store's are a cached view that may lag) and the expiry of
   * shared values (keys with a TTL on the store's own clock). Open it on the caller's clock
   * (`RedisStore.open(url, { clock: 'caller' })`): deadlines, leases and the TTLs of claims and
   * correlation groups are then by the `now` the cases pass. @default false
   */
  shared?: boolean;
  /**
   * The store takes due buffers shard by shard, in turns (the sharded Redis Cluster store):
   * oldest deadline first within a shard only, so the case of the order across the shards of
   * one claim is left out. @default false
   */
  sharded?: boolean;
}

/** The stores of one contract run: every store `fresh` or `restart` gives is closed after its test. */
export interface StoreHarness {
  /** A fresh, empty store, closed after the test. */
  fresh(): Promise<Store>;
  /** The same state again after a restart, closed after the test (only when the run has `reopen`). */
  restart(store: Store): Promise<Store>;
  /** A fresh store the test closes itself. */
  open: OpenStore;
  /** Whether the stores are shared by several instances (`ContractOptions.shared`). */
  readonly shared: boolean;
  /** Whether the store takes due buffers shard by shard (`ContractOptions.sharded`). */
  readonly sharded: boolean;
}

/** Call inside a `describe`: registers the `afterEach` that closes what the tests opened. */
export function storeHarness(open: OpenStore, reopen?: ReopenStore, shared?: boolean, sharded = false): StoreHarness {
  let stores: Store[] = [];
  afterEach(async () => {
    for (const store of stores) await store.close().catch(() => undefined);
    stores = [];
  });
  return {
    open,
    shared: shared ?? false,
    sharded,
    async fresh() {
      const store = await open();
      stores.push(store);
      // the cases left out for a shared store must be left out for that reason only
      if (shared !== undefined && store.shared !== shared)
        throw new Error(`this contract run has shared: ${shared}, but the store says shared: ${store.shared}`);
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
