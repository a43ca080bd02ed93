import type { InboundEvent } from '../../events/inbound.js';
import type { EventParts } from '../kit/event.js';
import { own, type PayloadReader } from '../kit/shape.js';

/**
 * MESSAGE_DELETE `{id, channel_id, guild_id?}` and MESSAGE_DELETE_BULK `{ids, channel_id,
 * guild_id?}` (discord.com/developers/docs/events/gateway-events#message-delete): a notice per
 * deleted message, revising it in its channel's session. Discord does not say who wrote it or
 * when it was deleted (the receive time stands for it). A message is deleted once: `<id>:deleted`
 * is the notice's id, the same on a RESUME's replay.
 */
export function deletions(
  read: PayloadReader,
  type: 'MESSAGE_DELETE' | 'MESSAGE_DELETE_BULK',
  data: unknown,
  botUserId: string | undefined,
  now: number,
  buildEvent: (parts: EventParts) => InboundEvent,
): InboundEvent[] {
  const d = read.object(data, 'd', `a ${type.toLowerCase()} {${type === 'MESSAGE_DELETE' ? 'id' : 'ids'}, channel_id}`);
  const channelId = read.text(own(d, 'channel_id'), 'd.channel_id');
  const guildId = read.optText(own(d, 'guild_id'), 'd.guild_id');
  const ids =
    type === 'MESSAGE_DELETE'
      ? [read.text(own(d, 'id'), 'd.id')]
      : read.array(own(d, 'ids'), 'd.ids').map((id, i) => read.text(id, `d.ids[${i}]`));
  const timestamp = Math.floor(now / 1000);
  return ids.map((id) =>
    buildEvent({
      kind: 'notice',
      detail: type.toLowerCase(),
      botId: botUserId,
      conversation: { type: guildId ? 'group' : 'private', id: channelId },
      sender: { id: 'unknown' },
      platformId: `${id}:deleted`,
      text: '',
      fields: { message_id: id, channel_id: channelId, ...(guildId ? { guild_id: guildId } : {}) },
      timestamp,
      revises: { kind: 'recall', messageId: id },
      raw: d,
    }),
  );
}
