import type { ConversationState, ContextMessage } from '../../events/context.js';
import type { LeasedBatch } from './buffer-leases.js';

/** How much context a conversation keeps: the newest `maxMessages`, forgotten `ttlMs` after the last append. */
export interface ContextKeep {
  maxMessages: number;
  ttlMs: number;
}

/**
 * What a conversation holds between two outputs (§12 of the contract): the messages not
 * emitted (context), and its activation override set at run time. Both are store state, so
 * they survive a restart and every instance sees the same.
 *
 * An emitted output clears the context it carried in its own commit: `OutboxDraft.contextUpTo`
 * names the last context entry it read, and `commit` / `commitTurn` remove the session's
 * entries up to it (and reset its dropped count) in the same step as the outbox append. A
 * batch `commitTurn` holds is not emitted: the context stays for the output it becomes.
 */
export interface Conversations {
  /**
   * A session's override and its kept context, oldest first, with the count trimmed since its
   * last output. With `read.context` false the caller needs the override alone (a batch that
   * will not be emitted): a store may then leave the context out (empty, dropped 0) and save
   * reading it.
   */
  conversation(sessionKey: string, now: number, read?: ConversationRead): Promise<ConversationState>;
  /**
   * Close a leased batch as context, in one step: remove its parts as `commit` does (release the
   * session, re-arm the buffer from later parts), append `messages` to the session's context
   * under new, growing `seq`s, drop the oldest past `keep.maxMessages` (counted in `dropped`),
   * and keep the context `keep.ttlMs` from now. A stale fence changes nothing: false.
   */
  keepContext(
    batch: LeasedBatch,
    messages: readonly ContextMessage[],
    now: number,
    keep: ContextKeep,
  ): Promise<boolean>;
  /** Set (or with `undefined`, remove) a session's activation override. */
  setActivation(sessionKey: string, override: ActivationModes | undefined, now: number): Promise<void>;
}

/** What a read of a conversation needs. */
export interface ConversationRead {
  /** The kept context: false when only the override is needed. @default true */
  context?: boolean;
}

/** A conversation's own activation modes, as `PUT /v1/conversations/<sessionKey>/activation` sets them. */
export type ActivationModes = NonNullable<ConversationState['activation']>;
