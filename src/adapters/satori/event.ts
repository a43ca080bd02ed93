import type { RequestError } from '../../core/errors.js';
import type { InboundEvent } from '../../events/inbound.js';
import type { EventParts } from '../kit/event.js';
import { QUOTE_TEXT_MAX } from '../kit/reply.js';
import { own, type Json, type PayloadReader } from '../kit/shape.js';
import type { Normalized } from '../kit/types.js';
import { plainText, readElements } from './elements.js';
import type { Logins } from './logins.js';

/** What reading one Satori event needs of its channel. */
export interface SatoriScope {
  read: PayloadReader;
  /** The 400 of a body that is not a Satori event. */
  fail(problem: string): RequestError;
  /**
   * Where a login's platform puts its conversations: a mapped platform's namespace (`namespaces`)
   * with the platform's ids as they are, else the channel's, each id after `<platform>:` so two
   * platforms' chats never share a session.
   */
  placeOf(platform: string): { namespace: string; scoped(id: string): string };
  /** The event builder of a namespace. */
  builderOf(namespace: string): (parts: EventParts) => InboundEvent;
  logins: Logins;
  now: number;
}

/** Channel.type DIRECT (satori.chat resources/channel): a private chat; TEXT, VOICE and the rest are groups. */
const DIRECT = 1;
/** Events that ask the bot to decide (satori.chat resources: friend, guild, guild-member requests). */
const REQUESTS = new Set(['friend-request', 'guild-request', 'guild-member-request']);
const NOTICES = /^(?:guild|guild-member|guild-role|friend|reaction)-/;

/**
 * One Satori event (`{op: 0, body: Event}`, satori.chat protocol/events) as events. Resources
 * are "promoted": `channel`, `user`, `member`, `guild` sit beside `message` (satori.chat
 * protocol/index). A message's platform id is `<platform>:<self_id>:<channel.id>:<message.id>`:
 * a message id is only unique within its bot and chat on some platforms (OneBot's per bot,
 * Telegram's per chat), and a recall names the message the same way.
 */
export function satoriEvent(scope: SatoriScope, event: Json): Normalized {
  const { read, logins } = scope;
  const type = read.text(own(event, 'type'), 'body.type');
  const login = read.optObject(own(event, 'login'), 'body.login', 'a login {platform, user}') ?? {};
  const loginUser = read.optObject(own(login, 'user'), 'body.login.user', 'a user {id}') ?? {};
  const platform =
    read.optText(own(login, 'platform'), 'body.login.platform') ||
    read.optText(own(event, 'platform'), 'body.platform');
  const selfId =
    read.optText(own(loginUser, 'id'), 'body.login.user.id') || read.optText(own(event, 'self_id'), 'body.self_id');

  if (type === 'login-added' || type === 'login-removed' || type === 'login-updated') {
    if (platform && selfId) {
      const status = read.optNumber(own(login, 'status'), 'body.login.status');
      // OFFLINE 0 and DISCONNECT 3 are a login gone for now; ONLINE, CONNECT and RECONNECT keep it.
      if (type === 'login-removed' || status === 0 || status === 3) logins.remove({ platform, userId: selfId });
      else logins.add({ platform, userId: selfId });
    }
    return { events: [], ignored: 1 };
  }
  if (!platform) throw scope.fail('body.login.platform is required (the platform of the login, or body.platform)');
  if (!selfId) throw scope.fail("body.login.user.id is required (the bot's user id, or body.self_id)");
  logins.add({ platform, userId: selfId });

  const { namespace, scoped } = scope.placeOf(platform);
  const buildEvent = scope.builderOf(namespace);
  const timestamp = read.timestamp(own(event, 'timestamp'), 'body.timestamp', 'ms', scope.now);
  const channel = read.optObject(own(event, 'channel'), 'body.channel', 'a channel {id, type}');
  const guild = read.optObject(own(event, 'guild'), 'body.guild', 'a guild {id}');
  const user = read.optObject(own(event, 'user'), 'body.user', 'a user {id}');
  const member = read.optObject(own(event, 'member'), 'body.member', 'a member {nick}') ?? {};
  const operator = read.optObject(own(event, 'operator'), 'body.operator', 'a user {id}');
  const channelId = channel ? read.text(own(channel, 'id'), 'body.channel.id') : undefined;
  const guildId = guild ? read.optText(own(guild, 'id'), 'body.guild.id') : undefined;
  const direct = channel !== undefined && read.optNumber(own(channel, 'type'), 'body.channel.type') === DIRECT;
  const userId = user ? read.text(own(user, 'id'), 'body.user.id') : undefined;
  const name =
    read.optText(own(member, 'nick'), 'body.member.nick') ||
    read.optText(own(member, 'name'), 'body.member.name') ||
    (user && (read.optText(own(user, 'nick'), 'body.user.nick') || read.optText(own(user, 'name'), 'body.user.name')));
  const sender = userId ? (name ? { id: userId, name } : { id: userId }) : { id: selfId };
  const base = { botId: selfId, timestamp, raw: event };

  if (type === 'message-created' || type === 'message-updated' || type === 'message-deleted') {
    if (!channelId) throw scope.fail(`body.channel is required (the channel of a ${type} {id, type})`);
    if (!userId) throw scope.fail(`body.user is required (the author of a ${type} {id})`);
    const message = read.object(own(event, 'message'), 'body.message', 'a message {id, content}');
    const messageId = read.text(own(message, 'id'), 'body.message.id');
    const platformId = `${platform}:${selfId}:${channelId}:${messageId}`;
    const conversation = { type: direct ? ('private' as const) : ('group' as const), id: scoped(channelId) };
    const fields: Record<string, string> = { message_id: messageId, channel_id: channelId, platform };
    if (guildId) fields.guild_id = guildId;

    if (type === 'message-deleted') {
      if (!direct) fields.group_id = channelId;
      fields.user_id = userId;
      const operatorId = operator && read.optText(own(operator, 'id'), 'body.operator.id');
      if (operatorId) fields.operator_id = operatorId;
      return {
        events: [
          buildEvent({
            ...base,
            kind: 'notice',
            // As OneBot names a recall, so the reports of both kinds of bot in one QQ group are one notice.
            detail: direct ? 'friend_recall' : 'group_recall',
            conversation,
            sender,
            platformId: `${platformId}:deleted`,
            text: '',
            fields,
            revises: { kind: 'recall', messageId: platformId, senderId: userId },
          }),
        ],
      };
    }

    const content = read.optText(own(message, 'content'), 'body.message.content') ?? '';
    const { segments, media, quote } = readElements(content);
    const text = plainText(segments);
    if (userId === selfId) {
      // The bot's own message (sent through us or by a person on its account): remembered, not a message in.
      if (type === 'message-updated') return { events: [], ignored: 1 };
      return {
        events: [],
        ignored: 1,
        sent: [{ namespace, messageId: platformId, botId: selfId, ...(text ? { content: text } : {}) }],
      };
    }
    // A quote given as the message's `quote` resource rather than inside its content (satori.chat resources/message).
    const quoted = read.optObject(own(message, 'quote'), 'body.message.quote', 'a message {id}');
    const quoteId = quote?.id ?? (quoted && read.optText(own(quoted, 'id'), 'body.message.quote.id'));
    if (quoteId) {
      fields.reply_to = `${platform}:${selfId}:${channelId}:${quoteId}`;
      const author = quoted && read.optObject(own(quoted, 'user'), 'body.message.quote.user', 'a user {id}');
      const authorId = quote?.senderId ?? (author && read.optText(own(author, 'id'), 'body.message.quote.user.id'));
      if (authorId) fields.reply_to_sender = authorId;
      const quotedText =
        quote?.text ??
        (quoted &&
          plainText(readElements(read.optText(own(quoted, 'content'), 'body.message.quote.content') ?? '').segments));
      if (quotedText) fields.reply_to_text = quotedText.slice(0, QUOTE_TEXT_MAX);
    }
    const forward = segments.find((segment) => segment.type === 'other' && segment.data.type === 'forward');
    if (forward) {
      fields.forwarded = 'true';
      if (forward.data.id) fields.forward_id = forward.data.id;
    }
    const edited = type === 'message-updated';
    if (edited) fields.edited_text = text;
    const updatedAt = read.optNumber(own(message, 'updated_at'), 'body.message.updated_at') ?? timestamp * 1000;
    const createdAt = read.optNumber(own(message, 'created_at'), 'body.message.created_at');
    return {
      events: [
        buildEvent({
          ...base,
          kind: 'message',
          detail: direct ? 'private' : 'group',
          subType: edited ? 'edited' : undefined,
          conversation,
          sender,
          // An edit has an id of its own (the message's would make it a duplicate of it), the same on a replay.
          platformId: edited ? `${platformId}:edited:${updatedAt}` : platformId,
          segments,
          text: edited ? `(edited) ${text}` : text,
          media,
          mentions: segments.flatMap((s) => (s.type === 'at' && s.data.qq && s.data.qq !== 'all' ? [s.data.qq] : [])),
          fields,
          timestamp:
            !edited && createdAt !== undefined
              ? read.timestamp(createdAt, 'body.message.created_at', 'ms', scope.now)
              : timestamp,
          revises: edited ? { kind: 'edit', messageId: platformId, senderId: userId } : undefined,
        }),
      ],
    };
  }

  const request = REQUESTS.has(type);
  if (!request && !NOTICES.test(type)) return { events: [], ignored: 1 };
  const fields: Record<string, string> = { platform };
  if (guildId) fields.group_id = guildId;
  if (channelId) fields.channel_id = channelId;
  if (userId) fields.user_id = userId;
  const operatorId = operator && read.optText(own(operator, 'id'), 'body.operator.id');
  if (operatorId) fields.operator_id = operatorId;
  const message = read.optObject(own(event, 'message'), 'body.message', 'a message {id}');
  const requestId = message && read.optText(own(message, 'id'), 'body.message.id');
  // A request is answered by its message id (`friend.approve {message_id}`, satori.chat resources/friend).
  if (requestId) fields.message_id = requestId;
  const conversation =
    guildId !== undefined
      ? { type: 'group' as const, id: scoped(guildId) }
      : { type: 'private' as const, id: scoped(userId ?? channelId ?? selfId) };
  const comment = message && read.optText(own(message, 'content'), 'body.message.content');
  return {
    events: [
      buildEvent({
        ...base,
        kind: request ? 'request' : 'notice',
        detail: type,
        conversation,
        sender,
        text: comment ? plainText(readElements(comment).segments) : '',
        fields,
      }),
    ],
  };
}
