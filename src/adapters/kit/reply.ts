import type { Quote } from '../../events/reply.js';

/** An id as a reply API takes it: a number when it is a safe integer, else the text as given. */
export function idValue(id: string): string | number {
  if (!/^-?\d{1,16}$/.test(id)) return id;
  const value = Number(id);
  return Number.isSafeInteger(value) ? value : id;
}

/**
 * The quote an adapter noted in its fields (`reply_to`, `reply_to_sender`, `reply_to_text`,
 * `reply_to_bot`), if any. `reply_to_bot` is `"true"` when the platform says the receiving bot
 * wrote the quoted message, `"false"` when it says a person did, and absent otherwise (another
 * bot, or the platform does not say): the author's id then tells whether it is one of ours.
 */
export function quoteOf(ids: Readonly<Record<string, string>>, key = 'reply_to'): Quote | undefined {
  const messageId = ids[key];
  if (!messageId) return undefined;
  const senderId = ids.reply_to_sender;
  const text = ids.reply_to_text;
  const fromBot = ids.reply_to_bot === 'true' ? true : ids.reply_to_bot === 'false' ? false : undefined;
  return {
    messageId,
    ...(senderId ? { senderId } : {}),
    ...(text ? { text, content: text } : {}),
    ...(fromBot === undefined ? {} : { fromBot }),
  };
}

/** The longest quoted text kept in an event's fields (the whole message is the platform's). */
export const QUOTE_TEXT_MAX = 200;
