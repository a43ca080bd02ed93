import type {
  ActivationModes,
  ContextKeep,
  ConversationRead,
  Conversations,
  LeasedBatch,
  Revised,
  RevisionKeep,
  TakeoverChange,
  TakeoverHold,
} from '../../core/ports/index.js';
import type { ContextMessage, ConversationState, KeptMessage, Revision, Takeover } from '../../events/context.js';
import { clock } from './codec.js';
import type { ScriptedRedis } from './connections.js';
import {
  conversationStateReply,
  endTakeoverReply,
  holdTakeoverReply,
  reviseReply,
  type ConversationStateReply,
} from './replies.js';

/**
 * Conversations (§12 and §13 of the contract) on Redis, on the keys lua/include/prelude.lua
 * lists, all of a session under its store's hash tag: its context (keep-context.lua closes a
 * batch and keeps it in one script; commit.lua and commit-turn.lua clear it), its revisions and
 * its takeover (revise.lua, hold-takeover.lua, end-takeover.lua, on the rules of
 * rules/revise.lua), and the overrides in one hash, `activation`, which every instance reads at once.
 */
export class RedisConversations implements Conversations {
  constructor(
    private readonly redis: ScriptedRedis,
    private readonly prefix: string,
    /** Leases by the caller's `now` (`clock: 'caller'`), else by the server's clock. */
    private readonly callerClock: boolean,
  ) {}

  async conversation(sessionKey: string, now: number, read?: ConversationRead): Promise<ConversationState> {
    // The override alone ('override') sends none of the session's entries over the wire.
    return conversationState(
      conversationStateReply(
        await this.redis.aiConversation(
          this.prefix,
          sessionKey,
          clock(now),
          ...(read?.context === false ? ['override'] : []),
        ),
      ),
    );
  }

  async keepContext(
    batch: LeasedBatch,
    messages: readonly ContextMessage[],
    now: number,
    keep: ContextKeep,
  ): Promise<boolean> {
    const kept = await this.redis.aiKeepContext(
      this.prefix,
      batch.debounceKey,
      batch.sessionKey,
      batch.fence,
      batch.parts.length,
      clock(now),
      Math.max(0, Math.floor(keep.maxMessages)),
      Math.max(0, Math.floor(keep.ttlMs)),
      ...messages.map((message) => JSON.stringify(message)),
    );
    return kept === 1;
  }

  async setActivation(sessionKey: string, override: ActivationModes | undefined): Promise<void> {
    const key = `${this.prefix}activation`;
    if (override === undefined) await this.redis.hdel(key, sessionKey);
    else await this.redis.hset(key, sessionKey, JSON.stringify(override));
  }

  async revise(
    sessionKey: string,
    debounceKeys: readonly string[],
    revision: Revision,
    now: number,
    keep: RevisionKeep,
  ): Promise<Revised> {
    return reviseReply(
      await this.redis.aiRevise(
        this.prefix,
        sessionKey,
        String(now),
        this.callerClock ? clock(now) : '',
        Math.max(1, Math.floor(keep.maxRevisions)),
        Math.max(0, keep.ttlMs),
        revision.kind,
        revision.messageId,
        JSON.stringify(revision.messageId),
        String(revision.at),
        JSON.stringify(revision),
        JSON.stringify(revision.content ?? ''),
        ...debounceKeys,
      ),
    );
  }

  async holdTakeover(sessionKey: string, at: number, hold: TakeoverHold, now: number): Promise<TakeoverChange> {
    const [started, takeover, ended] = holdTakeoverReply(
      await this.redis.aiHoldTakeover(this.prefix, sessionKey, String(at), hold.holdMs, hold.maxMs, String(now)),
    );
    const change: TakeoverChange = { started, takeover: takeoverOf(takeover) };
    if (ended !== null) change.ended = takeoverOf(ended);
    return change;
  }

  async endTakeover(sessionKey: string, now: number, since?: number): Promise<Takeover | undefined> {
    const ended = endTakeoverReply(
      await this.redis.aiEndTakeover(this.prefix, sessionKey, String(now), since === undefined ? '' : String(since)),
    );
    return ended === null ? undefined : takeoverOf(ended);
  }
}

/** A session's conversation as include/conversation-state.lua reads it (conversation.lua, claim-due.lua). */
export function conversationState([[activation, dropped, entries], revisions, takeover]: ConversationStateReply) {
  const state: ConversationState = { context: entries.map(keptOf), dropped };
  if (activation !== null) state.activation = JSON.parse(activation) as ActivationModes;
  if (revisions.length > 0) state.revisions = revisions.map((json) => JSON.parse(json) as Revision);
  if (takeover !== null) state.takeover = takeoverOf(takeover);
  return state;
}

/**
 * A kept entry as include/context.lua stores it: `<seq> <at>\n<message JSON>`, or, once an edit
 * set its content, `<seq> <at> <content as a JSON string>\n<message JSON>` (rules/revise.lua).
 */
function keptOf(entry: string): KeptMessage {
  const newline = entry.indexOf('\n');
  const header = entry.slice(0, newline);
  const [seq, at] = header.split(' ', 2);
  const message = JSON.parse(entry.slice(newline + 1)) as ContextMessage;
  const edited = header.indexOf(' ', header.indexOf(' ') + 1);
  if (edited >= 0) message.content = JSON.parse(header.slice(edited + 1)) as string;
  return { seq: Number(seq), at: Number(at), message };
}

/** A takeover as the scripts keep it: `<since> <until>`. */
function takeoverOf(held: string): Takeover {
  const [since, until] = held.split(' ');
  return { since: Number(since), until: Number(until) };
}
