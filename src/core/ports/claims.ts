import type { OutboxRecord } from './outbox-record.js';
import type { PushLease } from './push-queue.js';

/**
 * Claims (contract §15): agent workers take the push queue's records instead of a push. Same
 * queue, same order (one record in flight per session, in seq order), same outcomes through
 * `ackPush` (delivered, retry, dead) and the same dead letters; what differs is that a claim's
 * attempt is counted when it is taken, so a worker that vanishes uses one up, and that the
 * worker may extend its lease.
 */
export interface Claims {
  /**
   * As `claimPush`, and in the same step each record taken has its `attempts` raised by one (the
   * record handed out carries the new count: the attempt this claim is). `expired` is true for a
   * head whose earlier lease ran out (a worker took it and never answered).
   */
  claimOutputs(now: number, leaseMs: number, limit: number): Promise<ClaimLease[]>;
  /**
   * Move the end of a lease still held to `leaseUntil` (never earlier than it is). False, and
   * nothing changed, when the token is stale or the lease had run out by `now`.
   */
  extendClaim(lease: PushLease, leaseUntil: number, now: number): Promise<boolean>;
  /**
   * The outbox record `id` and, when it is its session's head and leased now (or leased and run
   * out, not yet taken again), that lease. Undefined: no such record.
   */
  claimOf(id: string): Promise<ClaimView | undefined>;
}

/** A record taken by a claim. */
export interface ClaimLease extends PushLease {
  /** The head's earlier lease ran out before this claim took it. */
  expired: boolean;
}

/** A record and the lease on it, if any. */
export interface ClaimView {
  record: OutboxRecord;
  lease?: { token: number; leaseUntil: number };
}
