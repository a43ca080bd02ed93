import type { RevisionOptions } from '../config/second-thoughts.js';
import type { Clock } from '../core/clock.js';
import { digest } from '../core/digest.js';
import type { Conversations } from '../core/ports/index.js';
import type { Ledger } from './ledger.js';
import type { Revision } from '../events/context.js';
import type { BufferedPart, InboundEvent } from '../events/inbound.js';
import type { Output, ProcessedMessage } from '../events/output.js';
import { secondThoughtEvent } from '../events/second-thought.js';

export interface RevisionStageOptions {
  clock: Clock;
  /** The session's revisions: recorded, applied to its context, found in its buffers. */
  store: Pick<Conversations, 'revise'>;
  /** Where the emitted messages' ids are kept (ledger.ts). */
  ledger: Ledger;
  options: RevisionOptions;
}

/** What a recall or an edit did. */
export type RevisionOutcome =
  /** Applied before the message reached the agent: where it waits (the flush applies it), or in the kept context. */
  | { verdict: 'applied'; where: 'buffer' | 'context' }
  /** The message was recalled already (another bot's report, a retry, an edit after the recall): nothing more. */
  | { verdict: 'already' }
  /** The message was emitted: this event carries its `chat.retracted` or `chat.edited` to the outbox. */
  | { verdict: 'emitted'; thought: InboundEvent }
  /** Not a message known here: the event goes on as it is (a notice, or a new message). */
  | { verdict: 'unknown' };

/** What the ledger keeps of an emitted message: the output, its channel and adapter, the message's id in it. */
interface LedgerEntry {
  o: string;
  c: string;
  a: string;
  m: string;
}

/**
 * Second thoughts on messages (contract §13). A recall or an edit is recorded with its session
 * in the store, which applies it to the kept context at once and tells whether the message
 * waits in a buffer (where each flush applies the session's revisions: `revisedParts`). A
 * message already emitted is found in a ledger of the outputs' message ids (every bot's id of
 * each part), kept `ttlMs`: its recall or edit becomes an output of its own.
 */
export function createRevisions(stage: RevisionStageOptions) {
  const { store, options } = stage;
  const keep = { maxRevisions: options.maxPerSession, ttlMs: options.ttlMs };

  async function revise(event: InboundEvent, debounceKeys: readonly string[]): Promise<RevisionOutcome> {
    const ref = event.revises;
    if (!ref || !options.enabled) return { verdict: 'unknown' };
    const now = stage.clock.now();
    const revision: Revision =
      ref.kind === 'edit'
        ? { kind: 'edit', messageId: ref.messageId, at: now, content: event.fields?.edited_text ?? event.text }
        : { kind: 'recall', messageId: ref.messageId, at: now };
    const revised = await store.revise(event.sessionKey, debounceKeys, revision, now, keep);
    // Recalled already: an edit changes nothing; a recall (a retry of one whose output was not
    // admitted, another bot's report) is told as its output, whose once-key keeps it once.
    if (!revised.recorded && revision.kind === 'edit') return { verdict: 'already' };
    if (revised.buffered) return { verdict: 'applied', where: 'buffer' };
    if (revised.context) return { verdict: 'applied', where: 'context' };
    const found = await stage.ledger.get(ledgerKey(event.sessionKey, ref.messageId), now);
    if (found === undefined) return revised.recorded ? { verdict: 'unknown' } : { verdict: 'already' };
    const entry = ledgerEntry(found);
    const place = {
      channel: entry.c,
      adapter: entry.a,
      namespace: event.namespace,
      sessionKey: event.sessionKey,
      conversation: event.conversation,
    };
    const about = { outputId: entry.o, messageId: entry.m };
    const thought =
      revision.kind === 'recall'
        ? secondThoughtEvent(place, { type: 'chat.retracted', ...about }, `retracted:${entry.o}:${entry.m}`, now)
        : secondThoughtEvent(
            place,
            { type: 'chat.edited', ...about, content: revision.content ?? '', media: mediaOf(event) },
            // Each edit once: by its own event's id (a retry shares it), else by its text.
            `edited:${entry.o}:${entry.m}:${event.platformId ?? digest(revision.content ?? '')}`,
            now,
          );
    return { verdict: 'emitted', thought };
  }

  /**
   * Remember an emitted message output's message ids (each part's, by every bot, and its
   * context's), so a later recall or edit finds them. In step for the ledger of this process
   * and for a store that writes them with the output's commit (every output passes here: no
   * promise of its own), else a promise for the store's.
   */
  function emitted(built: { type: Output['type'] }): Promise<void> | void {
    if (built.type !== 'chat.processedMessage' || !options.enabled) return;
    const output = built as Omit<ProcessedMessage, 'seq'>;
    const entries: Array<[string, string]> = [];
    for (const part of output.parts) {
      const value = ledgerValue(output.id, output.channel, output.sourceChannel, part.messageId);
      entries.push([ledgerKey(output.sessionKey, part.messageId), value]);
      // Every name a recall may give it: its platform id, and another bot's copy's where ids are
      // numbered per bot (OneBot's `<self_id>:<message_id>`). One key for a message one bot delivered.
      let aliases: string[] | undefined;
      for (const bot of part.bots) {
        if (bot.messageId === undefined || bot.botId === undefined) continue;
        const alias = `${bot.botId}:${bot.messageId}`;
        if (alias === part.messageId || aliases?.includes(alias)) continue;
        (aliases ??= []).push(alias);
        entries.push([ledgerKey(output.sessionKey, alias), value]);
      }
    }
    // The messages it carried as context reached the agent too: a recall of one is told alike.
    for (const message of output.context) {
      const value = ledgerValue(output.id, output.channel, output.sourceChannel, message.messageId);
      entries.push([ledgerKey(output.sessionKey, message.messageId), value]);
    }
    return stage.ledger.put(entries, options.ttlMs, stage.clock.now(), output.id);
  }

  return { revise, emitted };
}

export type Revisions = ReturnType<typeof createRevisions>;

/**
 * A batch's parts as its session's revisions leave them: recalled ones out, edited ones with
 * their new text. The same array when none applies (most batches). `aliases[i]`: the ids other
 * bots' copies of part `i` have (its correlation group's).
 */
export function revisedParts(
  parts: readonly BufferedPart[],
  revisions: readonly Revision[] | undefined,
  aliases: ReadonlyArray<readonly string[]> = [],
) {
  if (!revisions || revisions.length === 0) return { parts, recalled: none };
  const byId = new Map(revisions.map((revision) => [revision.messageId, revision]));
  let recalled: BufferedPart[] | undefined;
  let changed = false;
  const kept: BufferedPart[] = [];
  for (const [i, part] of parts.entries()) {
    // By its own id, else by another bot's id for it: the revision a recall of either recorded.
    const revision =
      byId.get(part.event.platformId ?? part.event.id) ??
      aliases[i]?.map((id) => byId.get(id)).find((found) => found !== undefined);
    if (!revision) kept.push(part);
    else if (revision.kind === 'recall') (recalled ??= []).push(part);
    else kept.push({ ...part, event: { ...part.event, text: revision.content ?? '' } });
    if (revision) changed = true;
  }
  return changed ? { parts: kept, recalled: recalled ?? none } : { parts, recalled: none };
}

const none: readonly BufferedPart[] = Object.freeze([]);

/** Plain text, not a digest: a hash per message id costs more than the key it saves (bench/pipeline.mjs, BENCH_REVISIONS). */
function ledgerKey(sessionKey: string, messageId: string): string {
  return `emitted:${sessionKey}\u0000${messageId}`;
}

/** What the ledger keeps of an emitted message, its fields joined by NUL (no ids hold one). */
function ledgerValue(outputId: string, channel: string, adapter: string, messageId: string): string {
  return `${outputId}\u0000${channel}\u0000${adapter}\u0000${messageId}`;
}

function ledgerEntry(value: string): LedgerEntry {
  const [o = '', c = '', a = '', ...m] = value.split('\u0000');
  return { o, c, a, m: m.join('\u0000') };
}

/** An edited message's attachments by reference, as context lists them. */
function mediaOf(event: InboundEvent) {
  return event.media.flatMap((ref) => {
    const handle = ref.url ?? ref.ref;
    return handle === undefined ? [] : [{ type: ref.type ?? ('document' as const), ref: handle }];
  });
}
