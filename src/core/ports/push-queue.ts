import type { OutboxRecord } from './outbox-record.js';

/**
 * The push queue to the agent, one record in flight per session, and its dead letters
 * (src/push/agent-push.ts).
 */
export interface PushQueue {
  /**
   * Take up to `limit` records to push: for each session, only its oldest pending record, and
   * only when that record is due (`nextAttemptAt <= now`) and no other pusher holds it.
   * Each gets a token and a lease until `now + leaseMs`; an expired lease is taken over.
   * Records carry their body (loaded now, not kept in memory while waiting).
   */
  claimPush(now: number, leaseMs: number, limit: number): Promise<PushLease[]>;
  /**
   * Record the outcome of an attempt. `delivered` and `dead` end the record's turn and let the
   * session's next record go; `retry` keeps it at the head of its session, due at `at`.
   * A stale token (the lease was lost) changes nothing and resolves false.
   */
  ackPush(lease: PushLease, outcome: PushOutcome, now: number): Promise<boolean>;
  /** When the earliest scheduled (not leased) pending record is due (undefined: none). */
  nextPushAt(): Promise<number | undefined>;
  /** Cluster-wide counts of undelivered and dead records (backpressure, stats, metrics). */
  deliveryCounts(): Promise<{ pending: number; dead: number }>;
  /** Records whose push exhausted its retries, oldest first. */
  deadLetters(limit: number): Promise<OutboxRecord[]>;
  /**
   * Put dead letters back in their sessions' queues (one by id, or up to `limit` oldest),
   * conditionally: a record that is no longer dead is not counted. Returns how many moved.
   */
  requeueDead(id: string | undefined, limit: number, now: number): Promise<number>;
}

/** A record taken to push, under a lease until `leaseUntil`; `token` fences its outcome. */
export interface PushLease {
  record: OutboxRecord;
  token: number;
  leaseUntil: number;
}

export type PushOutcome =
  | { state: 'delivered'; attempts: number }
  | { state: 'retry'; attempts: number; at: number; lastError: string }
  | { state: 'dead'; attempts: number; lastError: string };
