import type { ConversationState, ContextMessage, Revision, Takeover } from '../../events/context.js';
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
  /**
   * Record a recall or an edit of a message of `sessionKey` (contract §13), in one step:
   * - A message recalled already (a live recall of `revision.messageId` is kept) changes nothing:
   *   `recorded` false. Otherwise the revision is kept with the session's revisions, which
   *   `conversation` returns (an edit replaces an earlier edit of the same message), at most
   *   `keep.maxRevisions` (the oldest go), each for `keep.ttlMs` from its `at`.
   * - The kept context changes at once: a recall removes the entries of that `messageId`, an
   *   edit sets their `content` (`context`: some did).
   * - The buffers `debounceKeys` (the sender's, the session's held and deferred buffers) are
   *   searched for a part of that message (`event.platformId`, else `event.id`, or, for a part
   *   with a `correlationKey`, the `platformId` of a delivery in that live correlation group, as
   *   `correlation(key, now)` reads it: another bot's id for the same message): `buffered` when
   *   found. Their parts are left as they are (the flush applies the session's revisions),
   *   but a buffer found under a flush lease loses it: its fence moves on and the lease ends at
   *   `now`, so the flush in progress commits nothing and the buffer is taken again at once.
   */
  revise(
    sessionKey: string,
    debounceKeys: readonly string[],
    revision: Revision,
    now: number,
    keep: RevisionKeep,
  ): Promise<Revised>;
  /**
   * A human spoke in `sessionKey` at `at` (contract §13), or took it over by hand: a live
   * takeover (`until > now`) is extended to `min(at + hold.holdMs, since + hold.maxMs)` when
   * that is later; otherwise one starts (`started`): `since = at`, `until = at + min(holdMs,
   * maxMs)`, and one that had run out without being ended is ended in the same step (`ended`).
   * A takeover stays in the store until `endTakeover`; `conversation` returns it.
   */
  holdTakeover(sessionKey: string, at: number, hold: TakeoverHold, now: number): Promise<TakeoverChange>;
  /**
   * End a session's takeover and resolve it: by hand (`since` undefined) whatever it is; when
   * due (`since` given) only that one and only once `until <= now`. Undefined: nothing ended.
   */
  endTakeover(sessionKey: string, now: number, since?: number): Promise<Takeover | undefined>;
}

/** How many revisions a session keeps, and how long. */
export interface RevisionKeep {
  maxRevisions: number;
  ttlMs: number;
}

/** What a revision found. */
export interface Revised {
  /** False: the message was recalled already, and nothing changed. */
  recorded: boolean;
  /** A part of the message waits in one of the buffers searched (open, held, deferred or leased). */
  buffered: boolean;
  /** Kept context entries of the message were removed or rewritten. */
  context: boolean;
}

/** How long a takeover lasts: `holdMs` after the latest human message, at most `maxMs` after its start. */
export interface TakeoverHold {
  holdMs: number;
  maxMs: number;
}

/** What `holdTakeover` did. */
export interface TakeoverChange {
  started: boolean;
  takeover: Takeover;
  /** A takeover that had run out without its end: ended by this start. */
  ended?: Takeover;
}

/** What a read of a conversation needs. */
export interface ConversationRead {
  /** The kept context: false when only the override is needed. @default true */
  context?: boolean;
}

/** A conversation's own activation modes, as `PUT /v1/conversations/<sessionKey>/activation` sets them. */
export type ActivationModes = NonNullable<ConversationState['activation']>;
