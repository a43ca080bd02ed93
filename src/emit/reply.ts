import type { BotRef, BufferedPart, CorrelationRecord, Delivery } from '../events/inbound.js';
import type { MessagePart, Quote, ReplyHandle, ReplyParts, ReplyTarget } from '../events/reply.js';

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
 */
export function replyFields(
  parts: readonly BufferedPart[],
  groups: ReadonlyArray<CorrelationRecord | undefined>,
  replyBot: BotRef,
  replyTo: ReplyTo,
): ReplyFields {
  let quote: Quote | undefined;
  let reply: ReplyHandle | undefined;
  const out = parts.map((part, i): MessagePart => {
    const { event } = part;
    const copies = groups[i]?.deliveries ?? [ownDelivery(part)];
    let own: ReplyParts | undefined;
    let first: ReplyParts | undefined;
    const bots = copies.map((copy) => {
      const made = replyTo(copy.channel, { ids: copy.ids, conversation: event.conversation, sender: event.sender, ...botOf(copy), receivedAt: copy.at });
      first ??= made;
      if (sameBot(copy, replyBot)) own = made;
      return { channel: copy.channel, ...botOf(copy), ...(made?.messageId === undefined ? {} : { messageId: made.messageId }) };
    });
    const seen = own ?? first;
    if (quote === undefined && seen?.quote) quote = seen.quote;
    if (i === parts.length - 1) {
      const made = own ?? replyTo(replyBot.channel, { ids: {}, conversation: event.conversation, sender: event.sender, ...botOf(replyBot), receivedAt: part.receivedAt });
      if (made) reply = { ...replyBot, params: made.params, ...(made.expiresAt === undefined ? {} : { expiresAt: made.expiresAt }) };
    }
    return {
      messageId: event.platformId ?? event.id,
      timestamp: event.timestamp,
      senderId: event.sender.id,
      ...(seen?.quote ? { quote: seen.quote } : {}),
      bots,
    };
  });
  return { ...(reply ? { reply } : {}), ...(quote ? { quote } : {}), parts: out };
}

function ownDelivery(part: BufferedPart): Delivery {
  const { event } = part;
  return { channel: event.channel, adapter: event.adapter, ids: event.fields ?? {}, at: part.receivedAt, ...botOf(event) };
}

function botOf(bot: { botId?: string | undefined }): { botId?: string } {
  return bot.botId === undefined ? {} : { botId: bot.botId };
}

function sameBot(copy: Delivery, bot: BotRef): boolean {
  return copy.channel === bot.channel && copy.botId === bot.botId;
}
