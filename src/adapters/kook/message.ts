import type { InboundEvent, MediaRef, MediaType } from '../../events/inbound.js';
import type { EventParts } from '../kit/event.js';
import { own, type Json, type PayloadReader } from '../kit/shape.js';

/**
 * KOOK message events (developer.kookapp.cn/doc/event/event-introduction, …/event/message;
 * kaiheila/api-docs docs/zh-cn/event/*.md): `d.type` 1 text, 2 image, 3 video, 4 file,
 * 8 audio, 9 KMarkdown, 10 card, 255 system; `channel_type` GROUP (a channel of a server) or
 * PERSON (a direct chat).
 */

/** The message types that become messages, and the media type of those whose `content` is a URL. */
const MESSAGE_TYPES = new Map<number, MediaType | undefined>([
  [1, undefined],
  [9, undefined],
  [2, 'image'],
  [3, 'video'],
  [4, 'document'],
  [8, 'audio'],
]);

/** What every event of one delivery needs besides its `d`. */
export interface KookScope {
  read: PayloadReader;
  /** The 400 of a body that is not a KOOK event. */
  fail: (problem: string) => Error;
  /** Our bot's user id, when known (`botId`, or `/api/v3/user/me` with the bot token). */
  botId: string | undefined;
  now: number;
  buildEvent: (parts: EventParts) => InboundEvent;
}

/**
 * KMarkdown markup as a person reads it (developer.kookapp.cn/doc/kmarkdown): `(met)<id>(met)`
 * as `@name` from `extra.kmarkdown.mention_part`, `(met)all(met)` and `(met)here(met)` as
 * `@all`/`@here`, `(rol)<id>(rol)` as `@<role name>`, `(chn)<id>(chn)` as `#<channel name>`.
 */
export function kookText(read: PayloadReader, content: string, extra: Json | undefined): string {
  const kmarkdown = extra && read.optObject(own(extra, 'kmarkdown'), 'd.extra.kmarkdown');
  const names = (field: string, idKey: string, nameKey: string): Map<string, string> => {
    const found = new Map<string, string>();
    for (const [i, item] of read.optArray(kmarkdown && own(kmarkdown, field), `d.extra.kmarkdown.${field}`).entries()) {
      const part = read.optObject(item, `d.extra.kmarkdown.${field}[${i}]`);
      const id = part && read.optText(own(part, idKey), `d.extra.kmarkdown.${field}[${i}].${idKey}`);
      const name = part && read.optText(own(part, nameKey), `d.extra.kmarkdown.${field}[${i}].${nameKey}`);
      if (id && name) found.set(id, name);
    }
    return found;
  };
  const users = names('mention_part', 'id', 'username');
  const roles = names('mention_role_part', 'role_id', 'name');
  const channels = names('channel_part', 'id', 'name');
  return content
    .replace(/\(met\)([^()\s]+)\(met\)/g, (_markup, id: string) => `@${users.get(id) ?? id}`)
    .replace(/\(rol\)([^()\s]+)\(rol\)/g, (_markup, id: string) => `@${roles.get(id) ?? id}`)
    .replace(/\(chn\)([^()\s]+)\(chn\)/g, (_markup, id: string) => `#${channels.get(id) ?? id}`)
    .trim();
}

/** The conversation of a message: a server channel (`target_id`) or the direct chat with the other party. */
function conversationOf(
  read: PayloadReader,
  d: Json,
  authorId: string,
  botId: string | undefined,
): { type: 'private' | 'group'; id: string } {
  const targetId = read.text(own(d, 'target_id'), 'd.target_id');
  if (own(d, 'channel_type') !== 'PERSON') return { type: 'group', id: targetId };
  // A direct message our bot sent names the person as its target.
  return { type: 'private', id: botId !== undefined && authorId === botId ? targetId : authorId };
}

/** A message event (`d.type` 1, 2, 3, 4, 8, 9); undefined for the types that are not messages (cards). */
export function kookMessage(scope: KookScope, d: Json): InboundEvent | undefined {
  const { read, botId } = scope;
  const type = read.optNumber(own(d, 'type'), 'd.type');
  if (type === undefined || !MESSAGE_TYPES.has(type)) return undefined;
  const mediaType = MESSAGE_TYPES.get(type);
  const authorId = read.text(own(d, 'author_id'), 'd.author_id');
  const msgId = read.text(own(d, 'msg_id'), 'd.msg_id');
  const content = read.optText(own(d, 'content'), 'd.content') ?? '';
  const extra = read.optObject(own(d, 'extra'), 'd.extra');
  const conversation = conversationOf(read, d, authorId, botId);
  const author = extra && read.optObject(own(extra, 'author'), 'd.extra.author');
  const name =
    (author && read.optText(own(author, 'nickname'), 'd.extra.author.nickname')) ||
    (author && read.optText(own(author, 'username'), 'd.extra.author.username'));
  const mentions = read
    .optArray(extra && own(extra, 'mention'), 'd.extra.mention')
    .map((id, i) => read.text(id, `d.extra.mention[${i}]`));
  const media: MediaRef[] = [];
  let text = '';
  if (mediaType) {
    const attachments = extra && read.optObject(own(extra, 'attachments'), 'd.extra.attachments');
    const url = (attachments && read.optText(own(attachments, 'url'), 'd.extra.attachments.url')) || content;
    const fileName = attachments && read.optText(own(attachments, 'name'), 'd.extra.attachments.name');
    const mimeType = attachments && read.optText(own(attachments, 'file_type'), 'd.extra.attachments.file_type');
    const size = attachments && read.optNumber(own(attachments, 'size'), 'd.extra.attachments.size');
    if (!/^https?:\/\//.test(url)) throw scope.fail(`d.content of a type ${type} message must be its URL`);
    media.push({
      url,
      type: mediaType,
      ...(fileName ? { fileName } : {}),
      ...(mimeType?.includes('/') ? { mimeType } : {}),
      ...(size ? { size } : {}),
    });
  } else {
    text = kookText(read, content, extra);
  }
  const fields: Record<string, string> = { msg_id: msgId, target_id: read.text(own(d, 'target_id'), 'd.target_id') };
  const guildId = extra && read.optText(own(extra, 'guild_id'), 'd.extra.guild_id');
  if (guildId) fields.guild_id = guildId;
  const chatCode = extra && read.optText(own(extra, 'code'), 'd.extra.code');
  if (chatCode) fields.chat_code = chatCode;
  if (extra && own(extra, 'mention_all') === true) fields.mention_all = 'true';
  if (extra && own(extra, 'mention_here') === true) fields.mention_here = 'true';
  const quote = extra && read.optObject(own(extra, 'quote'), 'd.extra.quote');
  if (quote) {
    // A reply quotes its message (`rong_id`, the id it was sent under) and its author.
    const quoted = read.optText(own(quote, 'rong_id'), 'd.extra.quote.rong_id');
    const quoteAuthor = read.optObject(own(quote, 'author'), 'd.extra.quote.author');
    const quotedBy = quoteAuthor && read.optText(own(quoteAuthor, 'id'), 'd.extra.quote.author.id');
    if (quoted) fields.reply_to = quoted;
    if (quotedBy) {
      fields.reply_to_sender = quotedBy;
      if (botId !== undefined) fields.reply_to_bot = String(quotedBy === botId);
    }
  }
  return scope.buildEvent({
    kind: 'message',
    detail: conversation.type,
    subType: type === 9 ? 'kmarkdown' : undefined,
    botId,
    conversation,
    sender: { id: authorId, ...(name ? { name } : {}) },
    platformId: msgId,
    text,
    media,
    mentions,
    fields,
    timestamp: read.timestamp(own(d, 'msg_timestamp'), 'd.msg_timestamp', 'ms', scope.now),
    raw: d,
  });
}

/**
 * A system event (`d.type` 255; developer.kookapp.cn/doc/event/channel, …/direct-message):
 * `updated_message`/`updated_private_message` edit their message and `deleted_message`/
 * `deleted_private_message` recall it, by its `msg_id`, the platform id its own event had;
 * every other one is a notice. `d.target_id` of a server's system event is the server: the
 * channel is `body.channel_id`.
 */
export function kookSystemEvent(scope: KookScope, d: Json): InboundEvent {
  const { read, botId } = scope;
  const extra = read.object(own(d, 'extra'), 'd.extra', 'a system event {type, body}');
  const kind = read.text(own(extra, 'type'), 'd.extra.type');
  const body = read.optObject(own(extra, 'body'), 'd.extra.body') ?? {};
  const eventId = read.text(own(d, 'msg_id'), 'd.msg_id');
  const group = own(d, 'channel_type') !== 'PERSON';
  const targetId = read.text(own(d, 'target_id'), 'd.target_id');
  const fields: Record<string, string> = { event_type: kind, target_id: targetId, event_msg_id: eventId };
  const at = `d.extra.body`;
  const revised = read.optText(own(body, 'msg_id'), `${at}.msg_id`);
  const revision = kind.startsWith('updated_') ? 'edit' : kind.startsWith('deleted_') ? 'recall' : undefined;
  const isMessageRevision =
    revised !== undefined &&
    revision !== undefined &&
    (kind === 'updated_message' ||
      kind === 'deleted_message' ||
      kind === 'updated_private_message' ||
      kind === 'deleted_private_message');
  // In a direct chat the body names the message's author and its target: the other party is the one that is not our bot.
  const bodyAuthor = read.optText(own(body, 'author_id'), `${at}.author_id`);
  const bodyTarget = read.optText(own(body, 'target_id'), `${at}.target_id`);
  const channelId = read.optText(own(body, 'channel_id'), `${at}.channel_id`);
  const conversation = group
    ? { type: 'group' as const, id: channelId ?? targetId }
    : {
        type: 'private' as const,
        id: (botId !== undefined && bodyAuthor === botId ? bodyTarget : bodyAuthor) ?? bodyTarget ?? targetId,
      };
  if (channelId) fields.channel_id = channelId;
  if (!isMessageRevision) {
    return scope.buildEvent({
      id: eventId,
      kind: 'notice',
      detail: kind,
      botId,
      conversation,
      sender: { id: read.optText(own(body, 'user_id'), `${at}.user_id`) ?? bodyAuthor ?? 'system' },
      platformId: eventId,
      text: '',
      fields,
      timestamp: read.timestamp(own(d, 'msg_timestamp'), 'd.msg_timestamp', 'ms', scope.now),
      raw: d,
    });
  }
  fields.msg_id = revised;
  const senderId = bodyAuthor ?? 'unknown';
  if (revision === 'recall') {
    return scope.buildEvent({
      id: eventId,
      kind: 'notice',
      detail: kind,
      botId,
      conversation,
      sender: { id: senderId },
      // A message is deleted once: the same id on a retry of this event.
      platformId: `${revised}:deleted`,
      text: '',
      fields,
      timestamp: read.timestamp(
        own(body, 'deleted_at') ?? own(d, 'msg_timestamp'),
        `${at}.deleted_at`,
        'ms',
        scope.now,
      ),
      revises: bodyAuthor
        ? { kind: 'recall', messageId: revised, senderId: bodyAuthor }
        : { kind: 'recall', messageId: revised },
      raw: d,
    });
  }
  const updatedAt = read.optText(own(body, 'updated_at'), `${at}.updated_at`) ?? eventId;
  const text = kookText(read, read.optText(own(body, 'content'), `${at}.content`) ?? '', undefined);
  fields.edited_text = text;
  const mentions = read
    .optArray(own(body, 'mention'), `${at}.mention`)
    .map((id, i) => read.text(id, `${at}.mention[${i}]`));
  return scope.buildEvent({
    id: `${revised}:edited:${updatedAt}`,
    kind: 'message',
    detail: conversation.type,
    // An edit reads as one, as Discord's and Telegram's do, until its message is found (contract §13).
    subType: 'edited',
    botId,
    conversation,
    sender: { id: senderId },
    platformId: `${revised}:edited:${updatedAt}`,
    text: `(edited) ${text}`,
    mentions,
    fields,
    timestamp: read.timestamp(own(body, 'updated_at') ?? own(d, 'msg_timestamp'), `${at}.updated_at`, 'ms', scope.now),
    revises: bodyAuthor
      ? { kind: 'edit', messageId: revised, senderId: bodyAuthor }
      : { kind: 'edit', messageId: revised },
    raw: d,
  });
}
