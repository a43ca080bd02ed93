import type { ConversationState } from '../../events/context.js';
import type { BufferedPart } from '../../events/inbound.js';

/**
 * Buffers with owners, as the flush scheduler (src/debounce/scheduler.ts) drives them: take
 * what is due under a lease, keep the lease alive, give it back after a failure, and know
 * when to look again.
 */
export interface BufferLeases {
  /**
   * Take up to `limit` buffers whose deadline is at or before `now`, oldest deadline first
   * (a store sharded by session takes from its shards in turn, each oldest first, so no shard's
   * sessions wait behind another shard's backlog), at most one per session (`sessionKey`) in flight: a session whose earlier buffer is still
   * leased waits. Each gets a fresh fencing token and a lease until `now + leaseMs`; a buffer
   * whose lease ran out (its owner died) is due again and is taken over the same way.
   * `now = Infinity` takes every buffer (shutdown of a store no one else shares).
   */
  claimDue(now: number, leaseMs: number, limit: number): Promise<LeasedBatch[]>;
  /** Keep a lease alive while a slow flush (media) runs; false when the fence is stale. */
  renewLease(batch: LeasedBatch, now: number, leaseMs: number): Promise<boolean>;
  /** Give a lease back after a failed flush: the buffer is due again at `retryAt`. */
  release(batch: LeasedBatch, retryAt: number): Promise<void>;
  /** Earliest deadline of a buffer not leased, for the local timer (undefined: none). */
  nextDeadline(): Promise<number | undefined>;
}

/** A closed buffer, leased to one flusher. */
export interface LeasedBatch {
  debounceKey: string;
  sessionKey: string;
  /** The parts taken, in arrival order; later arrivals stay for the next batch. */
  parts: BufferedPart[];
  fence: number;
  leaseUntil: number;
  reason: FlushReason;
  /** The session's conversation as the claim read it, from a store that reads it in that step (Redis). */
  conversation?: LeasedConversation;
}

/**
 * A session's conversation read in the step that leased its batch, so that the flush decides
 * by it without a read of its own: `state` as `conversation` answers a read without the kept
 * context (`context: false`), and whether the session keeps some (a batch that goes out with its
 * context then reads it).
 */
export interface LeasedConversation {
  state: ConversationState;
  keepsContext: boolean;
}

export type FlushReason =
  'window' | 'count' | 'max_wait' | 'command' | 'shutdown' | 'takeover' | 'turn' | 'max_held' | 'budget';
