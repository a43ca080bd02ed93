import type {
  ActivationModes,
  ContextKeep,
  ConversationRead,
  Conversations,
  LeasedBatch,
} from '../../core/ports/index.js';
import type { ContextMessage, ConversationState, KeptMessage } from '../../events/context.js';
import { clock } from './codec.js';
import type { ScriptedRedis } from './connections.js';
import { conversationReply } from './replies.js';

/**
 * Conversations (§12 of the contract) on Redis, on the keys lua/include/context.lua lists: the
 * context of a session under its store's hash tag (keep-context.lua closes a batch and keeps it
 * in one script; commit.lua and commit-turn.lua clear it), overrides in one hash, `activation`,
 * which every instance reads at once.
 */
export class RedisConversations implements Conversations {
  constructor(
    private readonly redis: ScriptedRedis,
    private readonly prefix: string,
  ) {}

  async conversation(sessionKey: string, now: number, read?: ConversationRead): Promise<ConversationState> {
    if (read?.context === false) {
      // The override alone: one HGET, none of the session's entries over the wire.
      const modes = await this.redis.hget(`${this.prefix}activation`, sessionKey);
      return modes === null
        ? { context: [], dropped: 0 }
        : { context: [], dropped: 0, activation: JSON.parse(modes) as ActivationModes };
    }
    const [activation, dropped, entries] = conversationReply(
      await this.redis.aiConversation(this.prefix, sessionKey, clock(now)),
    );
    const state: ConversationState = { context: entries.map(keptOf), dropped };
    if (activation !== null) state.activation = JSON.parse(activation) as ActivationModes;
    return state;
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
}

/** A kept entry as include/context.lua stores it: `<seq> <at>\n<message JSON>`. */
function keptOf(entry: string): KeptMessage {
  const newline = entry.indexOf('\n');
  const [seq, at] = entry.slice(0, newline).split(' ');
  return { seq: Number(seq), at: Number(at), message: JSON.parse(entry.slice(newline + 1)) as ContextMessage };
}
