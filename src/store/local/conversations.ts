import type {
  ActivationModes,
  ContextKeep,
  RevisionKeep,
  TakeoverChange,
  TakeoverHold,
} from '../../core/ports/index.js';
import type { ContextMessage, ConversationState, KeptMessage, Revision, Takeover } from '../../events/context.js';
import { heldTakeover, keptRevisions, revisedContext } from '../rules/revise.js';

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
  /** Keep a revision and apply it to the kept context (see `Conversations.revise`): what it did there. */
  revisionKept(
    sessionKey: string,
    revision: Revision,
    now: number,
    keep: RevisionKeep,
  ): { recorded: boolean; context: boolean };
  /** Start or extend a takeover (see `Conversations.holdTakeover`). */
  takeoverHeld(sessionKey: string, at: number, hold: TakeoverHold, now: number): TakeoverChange;
  /** End a takeover (see `Conversations.endTakeover`). */
  takeoverEnded(sessionKey: string, now: number, since?: number): Takeover | undefined;
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
  /** By last revision, oldest first (a revision moves its session to the end): the sweep reads from the front. */
  private readonly revisions = new Map<string, { list: Revision[]; ttlMs: number }>();
  private readonly takeovers = new Map<string, Takeover>();
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
    const revisions = this.revisions.get(sessionKey);
    const live = revisions && keptRevisions(revisions.list, now, revisions.ttlMs);
    if (live && live.length > 0) state.revisions = live.map((revision) => ({ ...revision }));
    const takeover = this.takeovers.get(sessionKey);
    if (takeover) state.takeover = { ...takeover };
    return state;
  }

  revisionKept(
    sessionKey: string,
    revision: Revision,
    now: number,
    keep: RevisionKeep,
  ): { recorded: boolean; context: boolean } {
    const kept = this.revisions.get(sessionKey);
    const list = kept ? keptRevisions(kept.list, now, kept.ttlMs) : [];
    if (list.some((r) => r.kind === 'recall' && r.messageId === revision.messageId)) {
      return { recorded: false, context: false };
    }
    const next = list.filter((r) => r.messageId !== revision.messageId);
    next.push({ ...revision });
    this.revisions.delete(sessionKey);
    this.revisions.set(sessionKey, { list: next.slice(-Math.max(1, keep.maxRevisions)), ttlMs: keep.ttlMs });
    this.sweepRevisions(now);
    const conversation = this.conversations.get(sessionKey);
    if (!conversation || conversation.until <= now) return { recorded: true, context: false };
    const entries = revisedContext(conversation.entries, revision);
    if (entries === undefined) return { recorded: true, context: false };
    conversation.entries = entries;
    return { recorded: true, context: true };
  }

  /** Forget sessions whose newest revision has run out, least recently revised first. */
  private sweepRevisions(now: number): void {
    for (const [sessionKey, kept] of this.revisions) {
      const newest = kept.list[kept.list.length - 1];
      if (newest && newest.at + kept.ttlMs > now) return;
      this.revisions.delete(sessionKey);
    }
  }

  takeoverHeld(sessionKey: string, at: number, hold: TakeoverHold, now: number): TakeoverChange {
    const change = heldTakeover(this.takeovers.get(sessionKey), at, hold, now);
    this.takeovers.set(sessionKey, { ...change.takeover });
    return change;
  }

  takeoverEnded(sessionKey: string, now: number, since?: number): Takeover | undefined {
    const takeover = this.takeovers.get(sessionKey);
    if (!takeover || (since !== undefined && (takeover.since !== since || takeover.until > now))) return undefined;
    this.takeovers.delete(sessionKey);
    return takeover;
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
