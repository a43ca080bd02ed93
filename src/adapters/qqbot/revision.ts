import type { InboundEvent } from '../../events/inbound.js';
import type { EventParts } from '../kit/event.js';
import { own, type Json, type PayloadReader } from '../kit/shape.js';

/**
 * Guild deletions (bot.q.qq.com/wiki, event-emit.md: `MESSAGE_DELETE` for private bots,
 * `PUBLIC_MESSAGE_DELETE`, `DIRECT_MESSAGE_DELETE`), whose `d` is `{message, op_user}`: the
 * deleted message (`id`, `channel_id`, `guild_id`, `author`) and who deleted it. Groups and
 * C2C chats have none. Whether it names a DM, by the event type.
 */
export const deletionScenes = new Map<string, { direct: boolean }>([
  ['MESSAGE_DELETE', { direct: false }],
  ['PUBLIC_MESSAGE_DELETE', { direct: false }],
  ['DIRECT_MESSAGE_DELETE', { direct: true }],
]);

/**
 * A notice revising the deleted message, by the id its event had (`d.id`, the message id), in
 * the session its messages have: the channel's, or the DM's by its guild. A message is deleted
 * once, so `<id>:deleted` is the notice's platform id. A bot's message (ours included) was no
 * event: its deletion is ignored, as before.
 */
export function deletion(
  read: PayloadReader,
  payload: Json,
  type: string,
  direct: boolean,
  context: { namespace: string; botId: string; now: number; buildEvent: (parts: EventParts) => InboundEvent },
): InboundEvent | undefined {
  const d = read.object(own(payload, 'd'), 'd', 'a deletion {message, op_user}');
  const message = read.object(own(d, 'message'), 'd.message', 'the deleted message {id, channel_id, guild_id, author}');
  const author = read.optObject(own(message, 'author'), 'd.message.author');
  if (author && own(author, 'bot') === true) return undefined;
  const id = read.text(own(message, 'id'), 'd.message.id');
  const guildId = read.text(own(message, 'guild_id'), 'd.message.guild_id');
  const channelId = read.optText(own(message, 'channel_id'), 'd.message.channel_id');
  const senderId = author && read.optText(own(author, 'id'), 'd.message.author.id');
  const operator = read.optObject(own(d, 'op_user'), 'd.op_user');
  const operatorId = operator && read.optText(own(operator, 'id'), 'd.op_user.id');
  const eventId = read.optText(own(payload, 'id'), 'id');
  const { namespace } = context;
  const conversationId = direct ? guildId : read.text(channelId, 'd.message.channel_id');
  return context.buildEvent({
    ...(eventId ? { id: eventId } : {}),
    kind: 'notice',
    detail: type.toLowerCase(),
    botId: context.botId,
    conversation: { type: direct ? 'private' : 'group', id: conversationId },
    sessionKey: direct ? `${namespace}:dm:${guildId}` : `${namespace}:channel:${conversationId}`,
    sender: { id: senderId ?? 'unknown' },
    platformId: `${id}:deleted`,
    text: '',
    fields: {
      message_id: id,
      event_type: type,
      guild_id: guildId,
      ...(channelId ? { channel_id: channelId } : {}),
      ...(operatorId ? { operator_id: operatorId } : {}),
      ...(eventId ? { event_id: eventId } : {}),
    },
    timestamp: Math.floor(context.now / 1000),
    revises: senderId ? { kind: 'recall', messageId: id, senderId } : { kind: 'recall', messageId: id },
    raw: d,
  });
}
