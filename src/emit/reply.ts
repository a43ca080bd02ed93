import type { BotRef, BufferedPart, CorrelationRecord, Delivery } from '../events/inbound.js';
import type { ForwardedMessage, MessagePart, Quote, ReplyHandle, ReplyParts, ReplyTarget } from '../events/reply.js';
import { forwardedOf } from './forwarded.js';

/** The reply handle of one bot's copy, by the adapter of the bot's channel (undefined: no such channel). */
export type ReplyTo = (channel: string, target: ReplyTarget) => ReplyParts | undefined;

/** What a processed message says about answering it. */
export interface ReplyFields {
  reply?: ReplyHandle;
  quote?: Quote;
  parts: MessagePart[];
}

/**
 * The reply handle of `replyBot`, the quoted message and every part's per-bot ids. A part's
 * copies are its correlation group's deliveries (each bot with its own ids: OneBot message ids
 * differ per bot), or its own delivery alone. Every handle comes from the copy the bot itself
 * received; a mentioned bot that received none gets the conversation's handle without a message id.
 * `forwards`: what was read of each part's merged forward, when it names one.
 */
export function replyFields(
  parts: readonly BufferedPart[],
  groups: ReadonlyArray<CorrelationRecord | undefined>,
  replyBot: BotRef,
  replyTo: ReplyTo,
  forwards: ReadonlyArray<{ forwarded: ForwardedMessage[] } | undefined> = [],
): ReplyFields {
  // Loops and plain literals, no object spreads: this runs for every output (bench/pipeline.mjs).
  let quote: Quote | undefined;
  let reply: ReplyHandle | undefined;
  const out: MessagePart[] = new Array<MessagePart>(parts.length);
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as BufferedPart;
    const { event } = part;
    const copies = groups[i]?.deliveries ?? [ownDelivery(part)];
    let own: ReplyParts | undefined;
    let first: ReplyParts | undefined;
    const bots: MessagePart['bots'] = new Array<MessagePart['bots'][number]>(copies.length);
    for (let j = 0; j < copies.length; j++) {
      const copy = copies[j] as Delivery;
      const target: ReplyTarget = {
        ids: copy.ids,
        conversation: event.conversation,
        sender: event.sender,
        receivedAt: copy.at,
      };
      if (copy.botId !== undefined) target.botId = copy.botId;
      const made = replyTo(copy.channel, target);
      first ??= made;
      if (copy.channel === replyBot.channel && copy.botId === replyBot.botId) own = made;
      const bot: MessagePart['bots'][number] = { channel: copy.channel };
      if (copy.botId !== undefined) bot.botId = copy.botId;
      if (made?.messageId !== undefined) bot.messageId = made.messageId;
      bots[j] = bot;
    }
    const seen = own ?? first;
    if (quote === undefined && seen?.quote) quote = seen.quote;
    if (i === parts.length - 1) {
      let made = own;
      if (!made) {
        const target: ReplyTarget = {
          ids: {},
          conversation: event.conversation,
          sender: event.sender,
          receivedAt: part.receivedAt,
        };
        if (replyBot.botId !== undefined) target.botId = replyBot.botId;
        made = replyTo(replyBot.channel, target);
      }
      if (made) {
        reply = { channel: replyBot.channel } as ReplyHandle;
        if (replyBot.botId !== undefined) reply.botId = replyBot.botId;
        reply.params = made.params;
        if (made.expiresAt !== undefined) reply.expiresAt = made.expiresAt;
      }
    }
    const messageId = event.platformId ?? event.id;
    const made: MessagePart = seen?.quote
      ? { messageId, timestamp: event.timestamp, senderId: event.sender.id, quote: seen.quote, bots }
      : { messageId, timestamp: event.timestamp, senderId: event.sender.id, bots };
    const forwarded = forwardedOf(event, forwards[i]?.forwarded);
    if (forwarded) made.forwarded = forwarded;
    out[i] = made;
  }
  const fields: ReplyFields = { parts: out };
  if (reply) fields.reply = reply;
  if (quote) fields.quote = quote;
  return fields;
}

function ownDelivery(part: BufferedPart): Delivery {
  const { event } = part;
  const delivery: Delivery = {
    channel: event.channel,
    adapter: event.adapter,
    ids: event.fields ?? {},
    at: part.receivedAt,
  };
  if (event.botId !== undefined) delivery.botId = event.botId;
  return delivery;
}
