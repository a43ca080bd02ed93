import type { ActivationModes, ContextKeep } from '../../core/ports/index.js';
import type { ContextMessage, ConversationState, KeptMessage } from '../../events/context.js';

/**
 * Where a store owned by one process keeps its conversations (§12 of the contract): the rows
 * are their truth, with no index of LocalState's over them (memory: the maps below; SQLite: its
 * tables, so a rolled-back write leaves nothing behind). Each method runs inside the write of
 * the step it belongs to.
 */
export interface ConversationRows {
  /** Append `messages` under new seqs, trim past `keep.maxMessages` (counted), forget it `keep.ttlMs` from `now`. */
  contextKept(sessionKey: string, messages: readonly ContextMessage[], now: number, keep: ContextKeep): void;
  /** An output carried the session's context up to `upTo`: those entries go, and the dropped count with them. */
  contextCleared(sessionKey: string, upTo: number): void;
  /** The override, and (`withContext`) the kept context: leaving it out skips copying up to maxMessages entries. */
  conversation(sessionKey: string, now: number, withContext: boolean): ConversationState;
  activationSaved(sessionKey: string, override: ActivationModes | undefined): void;
}

interface Conversation {
  entries: KeptMessage[];
  dropped: number;
  /** When it is forgotten (ms): `ttlMs` after its last append. */
  until: number;
}

/** The memory store's conversations, in this process only. */
export class ConversationTable implements ConversationRows {
  /** By last append, oldest first (an append moves its conversation to the end): the sweep reads from the front. */
  private readonly conversations = new Map<string, Conversation>();
  private readonly activations = new Map<string, ActivationModes>();
  /** Store-wide: every append takes the next one, never reset. */
  private contextSeq = 0;

  contextKept(sessionKey: string, messages: readonly ContextMessage[], now: number, keep: ContextKeep): void {
    let kept = this.conversations.get(sessionKey);
    this.conversations.delete(sessionKey);
    if (!kept || kept.until <= now) kept = { entries: [], dropped: 0, until: 0 };
    for (const message of messages)
      kept.entries.push({ seq: ++this.contextSeq, at: now, message: copyMessage(message) });
    const excess = kept.entries.length - Math.max(0, keep.maxMessages);
    if (excess > 0) {
      kept.entries.splice(0, excess);
      kept.dropped += excess;
    }
    kept.until = now + keep.ttlMs;
    this.conversations.set(sessionKey, kept);
    this.sweep(now);
  }

  /** Forget conversations whose time is up, oldest append first (stops at the first still kept). */
  private sweep(now: number): void {
    for (const [sessionKey, kept] of this.conversations) {
      if (kept.until > now) return;
      this.conversations.delete(sessionKey);
    }
  }

  contextCleared(sessionKey: string, upTo: number): void {
    const kept = this.conversations.get(sessionKey);
    if (!kept) return;
    kept.entries = kept.entries.filter((entry) => entry.seq > upTo);
    kept.dropped = 0;
    if (kept.entries.length === 0) this.conversations.delete(sessionKey);
  }

  conversation(sessionKey: string, now: number, withContext: boolean): ConversationState {
    const kept = withContext ? this.conversations.get(sessionKey) : undefined;
    const activation = this.activations.get(sessionKey);
    const state: ConversationState =
      kept && kept.until > now
        ? {
            context: kept.entries.map((entry) => ({
              seq: entry.seq,
              at: entry.at,
              message: copyMessage(entry.message),
            })),
            dropped: kept.dropped,
          }
        : { context: [], dropped: 0 };
    if (activation) state.activation = { ...activation };
    return state;
  }

  activationSaved(sessionKey: string, override: ActivationModes | undefined): void {
    if (override === undefined) this.activations.delete(sessionKey);
    else this.activations.set(sessionKey, { ...override });
  }
}

/** A message the store keeps, or hands out: a copy of its own. */
function copyMessage(message: ContextMessage): ContextMessage {
  return { ...message, sender: { ...message.sender }, media: message.media.map((media) => ({ ...media })) };
}
