/** Shapes a store tells its users beside its records: what its tail saw, what its own checks found. */

/** What a shared store's tail tells beside records (Redis: another instance trims, the server may lose data). */
export interface TailEvents {
  /** Records after `after` and before `next` were trimmed before the tail read them (told before `next`). */
  gap?(after: number, next: number): void;
  /** The store was reset (its seq went back from `from` to `to`): records told from now on reuse seqs. */
  reset?(rollback: { from: number; to: number }): void;
}

/**
 * The life of an outbox's seqs: the span over which a seq names one record. A store that lost
 * data and assigns seqs again that it had assigned before (a Redis failover to a replica that
 * lagged, a `FLUSHALL`, an in-memory store restarted) begins a new life; a consumer's position
 * from an earlier life is then no position in this one (src/http/resume.ts).
 */
export interface OutboxLife {
  /** Names this life (letters, digits, `_`, `-`): another value is another life. */
  tag: string;
  /**
   * Records with a greater seq were committed in this life; those up to it may be of an earlier
   * one (0: every record is this life's).
   */
  since: number;
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
