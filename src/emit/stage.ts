import type { Clock } from '../core/clock.js';
import {
  ownBot,
  type BotRef,
  type BufferedPart,
  type CorrelationRecord,
  type InboundEvent,
  type PartMedia,
} from '../events/inbound.js';
import { type Output, type ProcessedMessage } from '../events/output.js';
import { isSecondThought, secondThoughtOutput } from '../events/second-thought.js';
import type { Addressed, KeptMessage } from '../events/context.js';
import type { ForwardFailure, Quote } from '../events/reply.js';
import type {
  AdmissionStore,
  DebounceBuffers,
  OutboxDraft,
  OutboxRecord,
  TurnLink,
  TurnRule,
} from '../core/ports/index.js';
import type { LeasedBatch } from '../core/ports/index.js';
import { buildProcessedEvent, buildProcessedMessage } from './build.js';
import { batchOutputId } from './output-id.js';
import type { PartForwards } from './forward-reader.js';
import { replyFields, type ReplyTo } from './reply.js';

export interface OutputStageOptions {
  clock: Clock;
  /**
   * The store: the correlation group of a buffered event, read at flush time; and the commit
   * of a leased batch to the outbox under the session's turn (undefined: the lease was lost).
   * With `turns` off too: a session's held messages (held before a restart that turned turns
   * off) go out first, and the store commits plainly when it has none.
   */
  store: Pick<AdmissionStore, 'correlation'> & Pick<DebounceBuffers, 'commitTurn' | 'commit'>;
  /** Each channel's settings: its `turns`, its `debounce.media`, its adapter's namespace. */
  rules: OutputRules;
  /** The downloads of a batch: waited for, and kept for a held batch's release (they are not fetched twice). */
  media: {
    collect(parts: readonly BufferedPart[]): Promise<PartMedia[]>;
    keep(parts: readonly BufferedPart[], media: readonly PartMedia[]): void;
  };
  /** The merged forwards of a batch, read while its window was open: waited for at most until their deadline. @default none read */
  forwards?: { collect(parts: readonly BufferedPart[]): Promise<Array<PartForwards | undefined>> };
  /** The bots this runtime knows: those an event mentions; those a group read at flush names are learned. */
  bots: {
    mentionedBots(event: InboundEvent): BotRef[];
    isOwnBot(namespace: string, id: string): boolean;
    learn(group: CorrelationRecord, namespaceOf: (channel: string) => string | undefined): void;
  };
  /** The group of an event that was not correlated. */
  soloRecord(event: InboundEvent): CorrelationRecord;
  botsOf(record: CorrelationRecord | undefined, event: InboundEvent): BotRef[];
  pickReplyBot(mentioned: readonly BotRef[], bots: readonly BotRef[], event: InboundEvent): BotRef;
  /** The reply handle of one bot's copy of a message, by its channel's adapter. */
  replyTo: ReplyTo;
  /** Whether outputs are queued for push to the agent. */
  pushes: boolean;
  /**
   * A message output about to be committed (second thoughts remember its message ids). Before
   * the commit: a recall that comes meanwhile finds the message in its buffer, one after finds it
   * emitted. A failure is logged by the caller and commits nonetheless. @default nothing
   */
  emitting?(built: Omit<ProcessedMessage, 'seq'>): Promise<void> | undefined;
}

/** What the output stage reads of a channel's settings. */
export interface OutputRules {
  turnsOf(channel: string): TurnRule;
  debounceOf(channel: string): { media: 'all' | 'first' };
  /** The namespace of a channel's adapter (undefined: no such channel). */
  namespaceOf(channel: string): string | undefined;
}

export interface Emitted {
  record: OutboxRecord;
  output: Omit<Output, 'seq'>;
  batch: LeasedBatch;
  /** How it stands to its session's turn, when it follows, steers or interrupts one. */
  link?: TurnLink;
}

/** A batch held for its session's open turn: `by` its output id, `until` it closes at the latest. */
export interface Held {
  held: { by: string; until: number; count: number };
  batch: LeasedBatch;
}

/**
 * The end of the pipeline: a leased batch becomes one output (merged text, media, the bots
 * that delivered it), moved from its buffer to the outbox in one store step. Returns undefined
 * when the lease was lost meanwhile: another instance owns the batch and commits it once.
 */
export function createOutput(options: OutputStageOptions) {
  const { clock, store, rules, media: downloads, bots: known } = options;
  const namespaceOf = (channel: string) => rules.namespaceOf(channel);

  async function groupOf(key: string | undefined, now: number): Promise<CorrelationRecord | undefined> {
    if (key === undefined) return undefined;
    const group = await store.correlation(key, now);
    // The group is store state: it names the bots whose copies other instances admitted, which
    // this one never heard from, and a mention of them must still pick them to reply.
    if (group) known.learn(group, namespaceOf);
    return group;
  }

  function draftOf(built: Omit<Output, 'seq'>, now: number, messageIds: string[]): OutboxDraft {
    return {
      id: built.id,
      type: built.type,
      sessionKey: built.sessionKey,
      channel: built.channel,
      createdAt: now,
      body: JSON.stringify(built),
      state: options.pushes ? 'pending' : 'none',
      messageIds,
    };
  }

  /** `reach`: why the batch reaches the agent and the context it carries (notices: always, none). */
  return async function output(
    batch: LeasedBatch,
    reach: Addressed = always,
    parts: readonly BufferedPart[] = batch.parts,
  ): Promise<Emitted | Held | undefined> {
    const first = parts[0]!.event;
    const now = clock.now();
    let built: Omit<Output, 'seq'>;
    let messageIds: string[];
    let media: PartMedia[] = noMedia;
    if (isSecondThought(first)) {
      // A retraction, an edit or a takeover: told at once, never held by a turn nor opening one.
      const told = secondThoughtOutput(batchOutputId(batch.debounceKey, parts), first);
      const record = await store.commit(batch, draftOf(told, now, [first.platformId ?? first.id]), now);
      return record && { record, output: told, batch };
    }
    if (first.kind !== 'message') {
      // A held notice or request: one output naming every bot that delivered it.
      const group = (await groupOf(parts[0]!.correlationKey, now)) ?? options.soloRecord(first);
      const participants = group.deliveries.map((d) => ({ ...ownBot(d), ids: d.ids }));
      const bots = options.botsOf(group, first);
      built = buildProcessedEvent(batchOutputId(batch.debounceKey, parts), first, participants, {
        replyBot: options.pickReplyBot([], bots, first),
        bots,
      });
      messageIds = parts.map((part) => part.event.platformId ?? part.event.id);
    } else {
      const last = parts[parts.length - 1]!.event;
      // Most batches have neither attachments nor correlated parts: no waiting for either then.
      let withMedia = false;
      let correlated = false;
      let withForwards = false;
      for (const part of parts) {
        withMedia ||= part.event.media.length > 0;
        correlated ||= part.correlationKey !== undefined;
        withForwards ||= part.event.fields?.forward_id !== undefined;
      }
      const [collected, groups, forwards] =
        withMedia || correlated || withForwards
          ? await Promise.all([
              withMedia ? downloads.collect(parts) : noMedia,
              correlated ? Promise.all(parts.map((part) => groupOf(part.correlationKey, now))) : noGroups,
              withForwards && options.forwards ? options.forwards.collect(parts) : noForwards,
            ])
          : [noMedia, noGroups, noForwards];
      media = collected;
      const lastBots = options.botsOf(groups[parts.length - 1], last);
      const lastMentioned = known.mentionedBots(last);
      // One part (most batches): its own lists, without building them twice.
      const bots = uniqueBots(
        parts.length === 1 ? lastBots : parts.flatMap((part, i) => options.botsOf(groups[i], part.event)),
      );
      const mentionedBots = uniqueBots(
        parts.length === 1 ? lastMentioned : parts.flatMap((part) => known.mentionedBots(part.event)),
      );
      const replyBot = options.pickReplyBot(lastMentioned, lastBots, last);
      const replies = replyFields(parts, groups, replyBot, options.replyTo, forwards);
      if (replies.quote) replies.quote = quoteFromStore(replies.quote, parts, reach.kept, first.namespace, known);
      const message = buildProcessedMessage(
        batchOutputId(batch.debounceKey, parts),
        parts,
        media,
        rules.debounceOf(first.channel).media,
        { replyBot, bots, mentionedBots },
        replies,
        reach,
        forwards === noForwards ? noForwardErrors : forwards.flatMap((read) => read?.errors ?? []),
      );
      built = message;
      messageIds = message.messageIds;
    }
    const draft = draftOf(built, now, messageIds);
    if (reach.contextUpTo !== undefined) draft.contextUpTo = reach.contextUpTo;
    if (built.type === 'chat.processedMessage') {
      // Remembered in step by the ledger of this process, or handed to a store that writes them in
      // the commit below (Redis): no turn of the loop spent on it then.
      const remembering = options.emitting?.(built as Omit<ProcessedMessage, 'seq'>);
      if (remembering) await remembering;
    }
    const done = await store.commitTurn(batch, draft, now, rules.turnsOf(first.channel));
    // A lost lease (a recall or an edit took it, or another instance): its next flush uses these downloads.
    if (!done) {
      if (media !== noMedia) downloads.keep(parts, media);
      return undefined;
    }
    if (done.held) {
      if (media !== noMedia) downloads.keep(parts, media);
      return { held: { by: done.by, until: done.until, count: done.count }, batch };
    }
    if (!done.link) return { record: done.record, output: built, batch };
    (built as Record<string, unknown>)[done.link.field] = done.link.id;
    return { record: done.record, output: built, batch, link: done.link };
  };
}

const always: Addressed = { addressed: true, trigger: 'always', context: [], contextDropped: 0, kept: [] };
const noMedia: PartMedia[] = [];

/**
 * A quote the payload names only by id (or without its text) completed from the conversation's
 * kept messages; `fromBot` from its author, when one of our bots wrote it.
 */
function quoteFromStore(
  quote: Quote,
  parts: readonly BufferedPart[],
  kept: readonly KeptMessage[],
  namespace: string,
  bots: { isOwnBot(namespace: string, id: string): boolean },
): Quote {
  const found =
    quote.content === undefined ? kept.find((entry) => entry.message.messageId === quote.messageId) : undefined;
  const senderId = quote.senderId ?? found?.message.sender.id;
  const content = quote.content ?? found?.message.content;
  // A part addressed as a reply to this very message was found to answer one of our bots (by the
  // messages they sent, when the payload names no author).
  const repliesToUs = parts.some(
    (part) => part.event.trigger === 'reply' && part.event.fields?.reply_to === quote.messageId,
  );
  const fromBot =
    quote.fromBot ?? (repliesToUs ? true : senderId === undefined ? undefined : bots.isOwnBot(namespace, senderId));
  if (senderId === quote.senderId && content === quote.content && fromBot === quote.fromBot) return quote;
  return {
    ...quote,
    ...(senderId === undefined ? {} : { senderId }),
    ...(content === undefined ? {} : { content }),
    ...(fromBot === undefined ? {} : { fromBot }),
  };
}
const noGroups: Array<CorrelationRecord | undefined> = [];
const noForwards: Array<PartForwards | undefined> = [];
/** Read only (the output lists forward errors only when there are some). */
const noForwardErrors: ForwardFailure[] = [];

function uniqueBots(bots: BotRef[]): BotRef[] {
  if (bots.length <= 1) return bots;
  const seen = new Set<string>();
  return bots.filter((bot) => {
    const key = `${bot.channel}\u0000${bot.botId ?? ''}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
