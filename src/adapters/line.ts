import type { ChannelConfig } from '../config/schema.js';
import { sessionKeyOf, type EventKind, type InboundEvent, type MediaRef, type MediaType } from '../events.js';
import { MediaError } from '../media/fetch.js';
import { hmac } from '../signing.js';
import { baseUrlOf, checkSignature, headerOf, secretOf, shapeError, settingOf, type Adapter, type Normalized } from './types.js';

// Platform payloads are walked defensively: every field read is checked or coerced with String/Number.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const mediaKinds: Record<string, MediaType> = { image: 'image', video: 'video', audio: 'audio', file: 'document' };
const noticeTypes = new Set(['follow', 'unfollow', 'join', 'leave', 'memberJoined', 'memberLeft', 'unsend', 'videoPlayComplete']);

function textOf(message: Json): string {
  switch (message.type) {
    case 'text': return String(message.text ?? '');
    case 'sticker': return `(sticker${Array.isArray(message.keywords) && message.keywords.length ? `: ${message.keywords.slice(0, 3).join(', ')}` : ` ${message.packageId}/${message.stickerId}`})`;
    case 'location': return `Location: ${[message.title, message.address].filter(Boolean).join(', ')} (${message.latitude}, ${message.longitude})`;
    case 'file': return message.fileName ? `(file: ${message.fileName})` : '';
    default: return '';
  }
}

/**
 * LINE Messaging API: `x-line-signature` is the base64 HMAC-SHA256 of the body with the
 * channel secret. One request can carry several events; `webhookEventId` is kept across
 * redeliveries (`deliveryContext.isRedelivery`), so it is the platform id.
 */
export function lineAdapter(channel: ChannelConfig): Adapter {
  const channelSecret = secretOf(channel, 'channelSecret');
  const accessToken = settingOf(channel, 'accessToken');
  const dataBaseUrl = baseUrlOf(channel, 'apiDataBaseUrl', 'https://api-data.line.me');
  const namespace = channel.namespace ?? 'line';
  const fail = (problem: string) => shapeError(channel, 'a LINE webhook', problem);

  return {
    name: 'line',
    channel: channel.id,
    namespace,

    verify(delivery) {
      if (!channelSecret) return;
      checkSignature(channel, 'x-line-signature', headerOf(delivery, 'x-line-signature'), hmac('sha256', channelSecret, delivery.body).toString('base64'));
    },

    normalize(body, delivery): Normalized {
      const payload = body as Json;
      if (typeof payload !== 'object' || payload === null || !Array.isArray(payload.events)) throw fail('expected {"destination":...,"events":[...]}');
      const botId = typeof payload.destination === 'string' ? payload.destination : undefined;
      const events: InboundEvent[] = [];
      let ignored = 0;
      for (const item of payload.events as Json[]) {
        const source = (item?.source ?? {}) as Json;
        const groupId = source.groupId ?? source.roomId;
        const conversation = source.type === 'group' || source.type === 'room'
          ? { type: 'group' as const, id: String(groupId) }
          : { type: 'private' as const, id: String(source.userId ?? 'unknown') };
        const kind: EventKind | undefined = item?.type === 'message' || item?.type === 'postback' ? 'message' : noticeTypes.has(item?.type) ? 'notice' : undefined;
        if (!kind) {
          ignored++;
          continue;
        }
        const message = (item.message ?? {}) as Json;
        const text = item.type === 'postback' ? String(item.postback?.data ?? '') : kind === 'message' ? textOf(message) : '';
        const media: MediaRef[] = [];
        const mediaType = mediaKinds[message.type as string];
        if (item.type === 'message' && mediaType) {
          const external = message.contentProvider?.type === 'external' ? message.contentProvider.originalContentUrl : undefined;
          media.push(external ? { url: String(external), type: mediaType } : { ref: String(message.id), type: mediaType, ...(message.fileSize ? { size: Number(message.fileSize) } : {}), ...(message.fileName ? { fileName: String(message.fileName) } : {}) });
        }
        const id = String(item.webhookEventId ?? message.id ?? `${item.timestamp}`);
        events.push({
          id, kind,
          detail: kind === 'message' ? conversation.type : String(item.type),
          channel: channel.id, adapter: 'line', namespace, conversation, sessionKey: sessionKeyOf(namespace, conversation),
          ...(botId ? { botId } : {}),
          sender: { id: String(source.userId ?? 'unknown') },
          ...(item.webhookEventId ? { platformId: String(item.webhookEventId) } : {}),
          segments: text ? [{ type: 'text', data: { text } }] : [],
          text, media, mentions: ((message.mention?.mentionees ?? []) as Json[]).map((m) => String(m.userId ?? '')).filter(Boolean),
          fields: {
            ...(item.replyToken ? { replyToken: String(item.replyToken) } : {}), ...(message.id ? { message_id: String(message.id) } : {}),
            ...(source.userId ? { user_id: String(source.userId) } : {}), ...(groupId ? { group_id: String(groupId) } : {}),
          },
          timestamp: Math.floor(Number(item.timestamp) / 1000) || Math.floor(delivery.now / 1000),
          raw: item,
        });
      }
      return { events, ignored };
    },

    async resolveMedia(ref) {
      if (!accessToken) throw new MediaError('bad_url', `channels[${channel.index}].accessToken is needed to download LINE content`, false);
      return { url: `${dataBaseUrl}/v2/bot/message/${encodeURIComponent(ref.ref ?? '')}/content`, headers: { authorization: `Bearer ${accessToken}` } };
    },
  };
}
