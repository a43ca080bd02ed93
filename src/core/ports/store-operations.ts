/** What the composition asks of a store as a running thing: its nature, stats, readiness, end. */
export interface StoreOperations {
  /** `memory`, `sqlite`, `redis` or `redis-cluster`. */
  readonly kind: string;
  /** False when a restart loses everything (the memory store). */
  readonly durable: boolean;
  /** True when other instances may own buffers and pushes in this store (Redis). */
  readonly shared: boolean;
  /**
   * Claim counts for stats: live keys, keys evicted by the cap (all spaces), and evictions by
   * claim space (`id:<channel>`: exact ids dropped before their window ended).
   */
  claimStats(): ClaimStats;
  /** Live correlation groups and groups evicted past `maxCorrelationGroups` (this instance's view may lag). */
  correlationStats(): { groups: number; evicted: number };
  /** Throws when ingest could not record now (readiness answers 503 exactly then). */
  ping(): Promise<void>;
  /**
   * Look again at what the store's own checks watch (Redis: that it was not reset, its
   * eviction policy), for stats and metrics; absent when there is nothing to watch.
   */
  health?(): Promise<StoreHealth>;
  close(): Promise<void>;
}

/** Dedup claim counts (see `StoreOperations.claimStats`). */
export interface ClaimStats {
  keys: number;
  evicted: number;
  evictedBySpace: Readonly<Record<string, number>>;
}

/** What a store found wrong with itself since start (see `StoreOperations.health`). */
export interface StoreHealth {
  /** Times the store was found reset (the outbox seq went backwards: data lost on the server). */
  rollbacks: number;
  /**
   * The last of them: seqs from `seenSeq` back to `seq`, when (this instance's clock); on a
   * sharded Redis Cluster store, `shard` names the shard that was reset (absent: the global keys).
   */
  lastRollback?: { reason: 'epoch' | 'seq'; seenSeq: number; seq: number; at: number; shard?: number };
  /** The server's `maxmemory-policy` when it evicts keys (undefined: `noeviction`, or not readable). */
  evictionPolicy?: string;
  /** Keys the server evicted since it started (`INFO stats`), while the policy evicts. */
  evictedKeys?: number;
}
