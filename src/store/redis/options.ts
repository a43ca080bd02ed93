import type { OutboxRecord, StoreOptions } from '../../core/ports/index.js';
import type { ConnectionLogger } from './connections.js';

/** Settings of the Redis store, on top of every store's. */
export interface RedisStoreOptions extends StoreOptions {
  /** Hash tag of every key (`{ai}:...`): several deployments can share one server. @default 'ai' */
  keyPrefix?: string;
  /** Longest wait for an ingest command (admit, ping) before it fails with 503. @default 1000 */
  commandTimeoutMs?: number;
  /** Replicas that must hold each admit and commit before it resolves (`WAIT`). @default 0 */
  waitReplicas?: number;
  logger?: ConnectionLogger;
  /**
   * Whose clock stamps arrivals and debounce deadlines: `server` (Redis `TIME`: one clock for
   * every instance) or `caller` (the `now` passed to admit: tests on a fake clock). @default 'server'
   */
  clock?: 'server' | 'caller';
  /** Set by the sharded store on each of its shards; not a setting. */
  shard?: ShardRole;
  /** How often the live tail checks that the store was not reset (and its longest XREAD block). @default 1000 */
  tailCheckMs?: number;
}

/**
 * A shard of the sharded store (`redis-cluster://`, sharded.ts), set by it: its commits append to
 * the shard's own outbox, and a commit whose answer was lost is looked for with `recorded`.
 */
export interface ShardRole {
  recorded(id: string): Promise<OutboxRecord | undefined>;
  /** Which shard it is, of how many: a reset found on it is reported as this shard's. */
  index: number;
  of: number;
}
