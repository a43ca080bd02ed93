import { mediaTypeOf, type InboundEvent, type MediaRef, type MediaType } from '../../events/inbound.js';
import type { EventParts } from '../kit/event.js';
import { QUOTE_TEXT_MAX } from '../kit/reply.js';
import { own, type Json, type PayloadReader } from '../kit/shape.js';

/** What one room event of a transaction needs besides itself. */
export interface RoomEventContext {
  read: PayloadReader;
  /** Where the event is in the transaction, for error messages (`events[2]`). */
  at: string;
  /** The appservice bot's user id (`@bot:hs`): a mention of it addresses the bot. */
  userId: string;
  now: number;
  buildEvent: (parts: EventParts) => InboundEvent;
}

/** Media message types and what they hold (spec: `m.room.message$m.image` and the like). */
const mediaTypes: ReadonlyMap<string, MediaType> = new Map([
  ['m.image', 'image'],
  ['m.audio', 'audio'],
  ['m.video', 'video'],
  ['m.file', 'document'],
]);

/**
 * One room event of a transaction (spec, Client-Server API "Room events"), or undefined when it
 * is none we take (reactions, receipts, other state). Every room is a group: whether a room is
 * direct lives in each member's `m.direct` account data, which an appservice transaction does not
 * carry, so a direct room is keyed as a group of two.
 */
export function roomEvent(event: Json, ctx: RoomEventContext): InboundEvent | undefined {
  const { read, at } = ctx;
  const type = read.text(own(event, 'type'), `${at}.type`);
  const roomId = read.text(own(event, 'room_id'), `${at}.room_id`);
  const sender = read.text(own(event, 'sender'), `${at}.sender`);
  const eventId = read.text(own(event, 'event_id'), `${at}.event_id`);
  const content = read.optObject(own(event, 'content'), `${at}.content`) ?? {};
  const timestamp = read.timestamp(own(event, 'origin_server_ts'), `${at}.origin_server_ts`, 'ms', ctx.now);
  const base = {
    id: eventId,
    botId: ctx.userId,
    conversation: { type: 'group' as const, id: roomId },
    sender: { id: sender },
    platformId: eventId,
    timestamp,
    raw: event,
  };
  // A state event is told from a message by its state_key (spec: "Room events", State events).
  const stateKey = read.optText(own(event, 'state_key'), `${at}.state_key`);
  if (stateKey !== undefined) {
    if (type !== 'm.room.member') return undefined;
    const membership = read.optText(own(content, 'membership'), `${at}.content.membership`) ?? '';
    return ctx.buildEvent({
      ...base,
      kind: 'notice',
      detail: 'member',
      subType: membership || undefined,
      text: '',
      fields: { user_id: stateKey, membership, room_id: roomId },
    });
  }
  if (type === 'm.room.redaction') {
    // Room versions 1-10 put `redacts` at the top level, v11 in the content (spec m.room.redaction).
    const redacts =
      read.optText(own(content, 'redacts'), `${at}.content.redacts`) ??
      read.text(own(event, 'redacts'), `${at}.redacts`);
    return ctx.buildEvent({
      ...base,
      kind: 'notice',
      detail: 'redaction',
      text: '',
      fields: { redacts, room_id: roomId },
      // The redacting user may be a moderator, not the author: the message's sender is not said.
      revises: { kind: 'recall', messageId: redacts },
    });
  }
  if (type !== 'm.room.message') return undefined;
  const relation = read.optObject(own(content, 'm.relates_to'), `${at}.content.m.relates_to`);
  if (relation && own(relation, 'rel_type') === 'm.replace') {
    // An edit: `m.new_content` replaces the whole content (spec "Event replacements"); its own
    // `body` is a fallback (`* new`) for clients that know no edits.
    const original = read.text(own(relation, 'event_id'), `${at}.content.m.relates_to.event_id`);
    const replaced = read.optObject(own(content, 'm.new_content'), `${at}.content.m.new_content`) ?? content;
    const parts = messageParts(replaced, `${at}.content.m.new_content`, ctx);
    return ctx.buildEvent({
      ...base,
      kind: 'message',
      detail: parts.msgtype,
      // An edit reads as one, as Telegram's and Discord's do, until its message is found (contract §13).
      subType: 'edited',
      text: `(edited) ${parts.text}`,
      media: parts.media,
      mentions: parts.mentions,
      fields: { room_id: roomId, event_id: eventId, edited_text: parts.text, edits: original },
      revises: { kind: 'edit', messageId: original, senderId: sender },
    });
  }
  const parts = messageParts(content, `${at}.content`, ctx);
  const fields: Record<string, string> = { room_id: roomId, event_id: eventId };
  const inReplyTo = relation
    ? read.optObject(own(relation, 'm.in_reply_to'), `${at}.content.m.relates_to.m.in_reply_to`)
    : undefined;
  const replyTo = inReplyTo
    ? read.optText(own(inReplyTo, 'event_id'), `${at}.content.m.relates_to.m.in_reply_to.event_id`)
    : undefined;
  if (replyTo) {
    fields.reply_to = replyTo;
    if (parts.quoted) fields.reply_to_text = parts.quoted.text.slice(0, QUOTE_TEXT_MAX);
    if (parts.quoted?.sender) {
      fields.reply_to_sender = parts.quoted.sender;
      if (parts.quoted.sender === ctx.userId) fields.reply_to_bot = 'true';
    }
  }
  return ctx.buildEvent({
    ...base,
    kind: 'message',
    detail: parts.msgtype,
    text: parts.text,
    media: parts.media,
    mentions: parts.mentions,
    fields,
  });
}

interface MessageParts {
  msgtype: string;
  text: string;
  media: MediaRef[];
  mentions: string[];
  /** The legacy reply fallback's quoted text and the sender it names, when the body carried one. */
  quoted?: Quoted;
}

/** The text, media and mentions of an `m.room.message` content (or an edit's `m.new_content`). */
function messageParts(content: Json, at: string, ctx: RoomEventContext): MessageParts {
  const { read } = ctx;
  const msgtype = read.optText(own(content, 'msgtype'), `${at}.msgtype`) ?? 'm.text';
  const { text: body, quoted } = withoutReplyFallback(read.optText(own(content, 'body'), `${at}.body`) ?? '');
  const mentions = mentionsOf(content, at, ctx, body);
  const mediaType = mediaTypes.get(msgtype);
  if (!mediaType) return { msgtype, text: body, media: [], mentions, ...(quoted ? { quoted } : {}) };
  // An encrypted attachment (`file`) cannot be read by an appservice that holds no room keys.
  const url = read.optText(own(content, 'url'), `${at}.url`);
  const info = read.optObject(own(content, 'info'), `${at}.info`) ?? {};
  const mimeType = read.optText(own(info, 'mimetype'), `${at}.info.mimetype`);
  const size = read.optNumber(own(info, 'size'), `${at}.info.size`);
  const fileName = read.optText(own(content, 'filename'), `${at}.filename`);
  // With a `filename` that differs from it, `body` is a caption; else it is the file's name.
  const caption = fileName !== undefined && fileName !== body ? body : '';
  const media: MediaRef[] = url?.startsWith('mxc://')
    ? [
        {
          ref: url,
          type: mimeType ? mediaTypeOf(mimeType) : mediaType,
          ...(mimeType ? { mimeType } : {}),
          ...(size ? { size } : {}),
          fileName: fileName ?? body,
        },
      ]
    : [];
  return { msgtype, text: caption, media, mentions };
}

/**
 * `m.mentions.user_ids` (spec "User and room mentions"); without `m.mentions` (older clients),
 * the bot when a `https://matrix.to/#/@bot:hs` pill in `formatted_body` or its id in the `body`
 * names it, outside the reply fallback (a quote of the bot's message is no mention of it).
 */
function mentionsOf(content: Json, at: string, ctx: RoomEventContext, body: string): string[] {
  const { read, userId } = ctx;
  const mentions = read.optObject(own(content, 'm.mentions'), `${at}.m.mentions`);
  const ids = mentions
    ? read
        .optArray(own(mentions, 'user_ids'), `${at}.m.mentions.user_ids`)
        .map((id, i) => read.text(id, `${at}.m.mentions.user_ids[${i}]`))
    : [];
  // With `m.mentions` present, it alone says who is mentioned (spec: no body matching then).
  if (!mentions) {
    const formatted = withoutReplyBlock(read.optText(own(content, 'formatted_body'), `${at}.formatted_body`) ?? '');
    if (formatted.includes(`matrix.to/#/${userId}`) || body.includes(userId)) ids.push(userId);
  }
  return [...new Set(ids)];
}

/** `formatted_body` without the leading `<mx-reply>` block of a reply fallback (spec "Rich replies"). */
function withoutReplyBlock(formatted: string): string {
  if (!formatted.startsWith('<mx-reply>')) return formatted;
  const end = formatted.indexOf('</mx-reply>');
  return end === -1 ? formatted : formatted.slice(end + '</mx-reply>'.length);
}

interface Quoted {
  text: string;
  sender?: string;
}

/**
 * A reply's legacy fallback: leading `> ` lines quoting the parent, the first naming its sender
 * (`> <@alice:hs> text`), then a blank line (spec "Rich replies"; optional since v1.13).
 * Stripped so the agent reads what the sender wrote.
 */
function withoutReplyFallback(body: string): { text: string; quoted?: Quoted } {
  if (!body.startsWith('> ')) return { text: body };
  const lines = body.split('\n');
  let i = 0;
  while (i < lines.length && (lines[i] as string).startsWith('> ')) i++;
  if (i >= lines.length || lines[i] !== '') return { text: body };
  const quoted = lines
    .slice(0, i)
    .map((line) => line.slice(2))
    .join('\n');
  const named = /^<(@[^>\s]+)> /.exec(quoted);
  return {
    text: lines.slice(i + 1).join('\n'),
    quoted: named ? { text: quoted.slice(named[0].length), sender: named[1] as string } : { text: quoted },
  };
}
