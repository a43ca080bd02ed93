import type { Quote } from '../../events/reply.js';

/** An id as a reply API takes it: a number when it is a safe integer, else the text as given. */
export function idValue(id: string): string | number {
  if (!/^-?\d{1,16}$/.test(id)) return id;
  const value = Number(id);
  return Number.isSafeInteger(value) ? value : id;
}

/** The quote an adapter noted in its fields (`reply_to`, `reply_to_sender`, `reply_to_text`), if any. */
export function quoteOf(ids: Readonly<Record<string, string>>, key = 'reply_to'): Quote | undefined {
  const messageId = ids[key];
  if (!messageId) return undefined;
  const senderId = ids.reply_to_sender;
  const text = ids.reply_to_text;
  return { messageId, ...(senderId ? { senderId } : {}), ...(text ? { text } : {}) };
}

/** The longest quoted text kept in an event's fields (the whole message is the platform's). */
export const QUOTE_TEXT_MAX = 200;
