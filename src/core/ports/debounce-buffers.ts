import type { TurnLink, TurnRule } from '../../events/turn.js';
import type { BufferLeases, LeasedBatch } from './buffer-leases.js';
import type { OutboxDraft, OutboxRecord } from './outbox-record.js';

/**
 * The debounce buffers whole: their leases, plus the commit that ends a lease with an output
 * (the emit stage) and the count of open buffers (stats).
 */
export interface DebounceBuffers extends BufferLeases {
  /**
   * Move a leased batch to the outbox in one step: remove its parts, assign the next global
   * seq, append `draft`, queue it for push when `draft.state` is `pending`, release the
   * session, and re-arm the buffer from parts that arrived meanwhile. A stale fence (the lease
   * was lost and another owner took the buffer) changes nothing and resolves `undefined`.
   */
  commit(batch: LeasedBatch, draft: OutboxDraft, now: number): Promise<OutboxRecord | undefined>;
  /** Open buffers (not yet committed) in the whole store. */
  openBuffers(): Promise<number>;
  /**
   * `commit` under the session's turn, in the same one step (docs/turns.md, rules/turn.ts): held,
   * or emitted with its link spliced at the end of `draft.body`. Stale fence: `undefined`. With
   * `rule.mode` off it is `commit` unless the session has held messages (they go first).
   */
  commitTurn(batch: LeasedBatch, draft: OutboxDraft, now: number, rule: TurnRule): Promise<TurnCommit | undefined>;
  /**
   * The sender of an open buffer is typing (contract §13): when the buffer `debounceKey` of
   * `sessionKey` is open, not leased and closes by its window, move its deadline to
   * `min(untilAt, first part + maxWaitMs of its rule)` if that is later than its deadline now.
   * Resolves the new deadline, or `undefined` when nothing moved (absent, leased, retrying, held,
   * deferred, closed by a command or the count, or already due later). A later part re-arms the
   * buffer from its parts as ever. `sessionKey` names the shard of a sharded store. Optional, so a
   * store written before it still fits: without it, typing signals move no deadline.
   */
  holdForTyping?(debounceKey: string, sessionKey: string, untilAt: number, now: number): Promise<number | undefined>;
}

/** What `commitTurn` did: emitted the record (with its link to the turn), or held the batch. */
export type TurnCommit =
  { held: false; record: OutboxRecord; link?: TurnLink } | { held: true; by: string; until: number; count: number };
