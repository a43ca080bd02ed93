import type { StoreOptions } from '../../ports.js';
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
  /** How often the live tail checks that the store was not reset (and its longest XREAD block). @default 1000 */
  tailCheckMs?: number;
}
