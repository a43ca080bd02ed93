import { z } from 'zod';
import type { EventKind, InboundEvent, MediaRef, MediaType, RevisionRef } from '../../events/inbound.js';
import type { ReplyParts, ReplyTarget, ReplyValue } from '../../events/reply.js';
import { quoteOf } from '../kit/reply.js';
import { MediaError } from '../../core/errors.js';
import { hmac } from '../../core/signing.js';
import { defineAdapter, type AdapterChannel } from '../kit/descriptor.js';
import { eventBuilder } from '../kit/event.js';
import { baseUrl, optionalText } from '../kit/settings.js';
import { own, PayloadReader, type Json } from '../kit/shape.js';
import { checkSignature, headerOf, shapeError, verifiedSecret, type Adapter, type Normalized } from '../kit/types.js';

const settings = z.strictObject({
  /** Signs `x-line-signature`. */
  channelSecret: optionalText(),
  /** Channel access token, for content downloads. */
  accessToken: optionalText(),
  apiDataBaseUrl: baseUrl('https://api-data.line.me'),
});

/** LINE Messaging API. */
export const line = defineAdapter({
  name: 'line',
  namespace: 'line',
  secret: { setting: 'channelSecret', required: true },
  settings,
  // LINE's Messaging API docs give no redelivery horizon: today's exact-id window (dedup.idTtlMs).
  retryHorizonMs: 300_000,
  create: lineAdapter,
});

const mediaKinds = new Map<string, MediaType>([
  ['image', 'image'],
  ['video', 'video'],
  ['audio', 'audio'],
  ['file', 'document'],
]);
const noticeTypes = new Set([
  'follow',
  'unfollow',
  'join',
  'leave',
  'memberJoined',
  'memberLeft',
  'unsend',
  'videoPlayComplete',
]);

function textOf(read: PayloadReader, message: Json, at: string): string {
  const field = (key: string) => read.optText(own(message, key), `${at}.${key}`);
  switch (own(message, 'type')) {
    case 'text':
      return field('text') ?? '';
    case 'sticker': {
      const keywords = read
        .optArray(own(message, 'keywords'), `${at}.keywords`)
        .filter((k): k is string => typeof k === 'string');
      return `(sticker${keywords.length ? `: ${keywords.slice(0, 3).join(', ')}` : ` ${field('packageId')}/${field('stickerId')}`})`;
    }
    case 'location': {
      const place = [field('title'), field('address')].filter(Boolean).join(', ');
      return `Location: ${place} (${read.optNumber(own(message, 'latitude'), `${at}.latitude`)}, ${read.optNumber(own(message, 'longitude'), `${at}.longitude`)})`;
    }
    case 'file': {
      const name = field('fileName');
      return name ? `(file: ${name})` : '';
    }
    default:
      return '';
  }
}

/**
 * LINE Messaging API: `x-line-signature` is the base64 HMAC-SHA256 of the body with the
 * channel secret. One request can carry several events. A message event's platform id is its
 * `message.id`, the id an `unsend` and a quote (`quotedMessageId`) name it by; other events
 * are keyed by `webhookEventId`. A redelivery (`deliveryContext.isRedelivery`) is the same
 * event again, both ids included, so it is a duplicate.
 */
export function lineAdapter(channel: AdapterChannel, options: z.output<typeof settings>): Adapter {
  const channelSecret = verifiedSecret(channel, options.channelSecret);
  const { accessToken, apiDataBaseUrl: dataBaseUrl } = options;
  const namespace = channel.namespace;
  const buildEvent = eventBuilder({ channel: channel.id, adapter: 'line', namespace, idPrefix: 'line' });
  const fail = (problem: string) => shapeError(channel, 'a LINE webhook', problem);

  return {
    name: 'line',
    channel: channel.id,
    namespace,

    verify(delivery) {
      if (!channelSecret) return;
      checkSignature(
        channel,
        'x-line-signature',
        headerOf(delivery, 'x-line-signature'),
        hmac('sha256', channelSecret, delivery.body).toString('base64'),
      );
    },

    normalize(body, delivery): Normalized {
      const read = new PayloadReader(fail);
      const payload = read.object(body, 'the body', '{"destination":...,"events":[...]}');
      const botId = read.optText(own(payload, 'destination'), 'destination') || undefined;
      const events: InboundEvent[] = [];
      let ignored = 0;
      read.array(own(payload, 'events'), 'events').forEach((value, i) => {
        const at = `events[${i}]`;
        const item = read.object(value, at, 'an event object {type, source, ...}');
        const type = read.optText(own(item, 'type'), `${at}.type`);
        const kind: EventKind | undefined =
          type === 'message' || type === 'postback'
            ? 'message'
            : type !== undefined && noticeTypes.has(type)
              ? 'notice'
              : undefined;
        if (!kind) {
          ignored++;
          return;
        }
        const source = read.optObject(own(item, 'source'), `${at}.source`) ?? {};
        const userId = read.optText(own(source, 'userId'), `${at}.source.userId`);
        const groupId =
          read.optText(own(source, 'groupId'), `${at}.source.groupId`) ??
          read.optText(own(source, 'roomId'), `${at}.source.roomId`);
        const sourceType = own(source, 'type');
        const conversation =
          sourceType === 'group' || sourceType === 'room'
            ? { type: 'group' as const, id: groupId ?? 'unknown' }
            : { type: 'private' as const, id: userId || 'unknown' };
        const message = read.optObject(own(item, 'message'), `${at}.message`) ?? {};
        const messageId = read.optText(own(message, 'id'), `${at}.message.id`);
        const postback = read.optObject(own(item, 'postback'), `${at}.postback`) ?? {};
        const text =
          type === 'postback'
            ? (read.optText(own(postback, 'data'), `${at}.postback.data`) ?? '')
            : kind === 'message'
              ? textOf(read, message, `${at}.message`)
              : '';
        const media: MediaRef[] = [];
        const messageType = own(message, 'type');
        const mediaType = typeof messageType === 'string' ? mediaKinds.get(messageType) : undefined;
        if (type === 'message' && mediaType) {
          const provider = read.optObject(own(message, 'contentProvider'), `${at}.message.contentProvider`) ?? {};
          const external =
            own(provider, 'type') === 'external'
              ? read.optText(own(provider, 'originalContentUrl'), `${at}.message.contentProvider.originalContentUrl`)
              : undefined;
          const size = read.optNumber(own(message, 'fileSize'), `${at}.message.fileSize`);
          const fileName = read.optText(own(message, 'fileName'), `${at}.message.fileName`);
          if (external) media.push({ url: external, type: mediaType });
          else if (messageId)
            media.push({
              ref: messageId,
              type: mediaType,
              ...(size ? { size } : {}),
              ...(fileName ? { fileName } : {}),
            });
        }
        const mentions = mentionsOf(read, message, `${at}.message`, botId);
        const webhookEventId = read.optText(own(item, 'webhookEventId'), `${at}.webhookEventId`) || undefined;
        const replyToken = read.optText(own(item, 'replyToken'), `${at}.replyToken`);
        // LINE stamps events in milliseconds.
        const timestamp = read.timestamp(own(item, 'timestamp'), `${at}.timestamp`, 'ms', delivery.now);
        events.push(
          buildEvent({
            id: webhookEventId ?? messageId ?? `line_${timestamp}_${i}`,
            kind,
            detail: kind === 'message' ? conversation.type : (type as string),
            botId,
            conversation,
            sender: { id: userId || 'unknown' },
            platformId: type === 'message' ? messageId || webhookEventId : webhookEventId,
            text,
            media,
            mentions,
            fields: {
              ...(replyToken ? { replyToken } : {}),
              ...(messageId ? { message_id: messageId } : {}),
              ...(userId ? { user_id: userId } : {}),
              ...(groupId ? { group_id: groupId } : {}),
              ...quoteFields(read, message, `${at}.message`),
            },
            timestamp,
            revises: type === 'unsend' ? unsendOf(read, item, at, userId) : undefined,
            raw: item,
          }),
        );
      });
      return { events, ignored };
    },

    replyTo: lineReply,

    async resolveMedia(ref) {
      if (!accessToken)
        throw new MediaError(
          'bad_url',
          `channels[${channel.index}].accessToken is needed to download LINE content`,
          false,
        );
      return {
        url: `${dataBaseUrl}/v2/bot/message/${encodeURIComponent(ref.ref ?? '')}/content`,
        headers: { authorization: `Bearer ${accessToken}` },
      };
    },
  };
}

/**
 * Who a text message mentions (`mention.mentionees[]`, developers.line.biz/en/reference/messaging-api/#wh-text):
 * users by `userId` (sent only with the user's consent), and this bot as `isSelf: true`, which
 * becomes the bot's id (the webhook's `destination`). An `all` mention names no one.
 */
function mentionsOf(read: PayloadReader, message: Json, at: string, botId: string | undefined): string[] {
  const mention = read.optObject(own(message, 'mention'), `${at}.mention`) ?? {};
  return read.optArray(own(mention, 'mentionees'), `${at}.mention.mentionees`).flatMap((item, k) => {
    const mentionee = read.object(item, `${at}.mention.mentionees[${k}]`);
    if (own(mentionee, 'isSelf') === true && botId) return [botId];
    const userId = read.optText(own(mentionee, 'userId'), `${at}.mention.mentionees[${k}].userId`);
    return userId ? [userId] : [];
  });
}

/**
 * The message an `unsend` takes back (developers.line.biz/en/reference/messaging-api/#unsend-event):
 * `unsend.messageId` is that message's `message.id`, its platform id here, and the event's
 * source is the message's own (its sender, in its chat), so it names the same session.
 */
function unsendOf(read: PayloadReader, item: Json, at: string, userId: string | undefined): RevisionRef | undefined {
  const unsend = read.optObject(own(item, 'unsend'), `${at}.unsend`) ?? {};
  const messageId = read.optText(own(unsend, 'messageId'), `${at}.unsend.messageId`);
  if (!messageId) return undefined;
  return userId ? { kind: 'recall', messageId, senderId: userId } : { kind: 'recall', messageId };
}

/**
 * A message's quote handles: the quoted message (`quotedMessageId`) and its own `quoteToken`.
 * LINE names no author of the quoted message: reply_to_sender and reply_to_bot stay unknown.
 */
function quoteFields(read: PayloadReader, message: Json, at: string): Record<string, string> {
  const quoted = read.optText(own(message, 'quotedMessageId'), `${at}.quotedMessageId`);
  const token = read.optText(own(message, 'quoteToken'), `${at}.quoteToken`);
  return { ...(quoted ? { reply_to: quoted } : {}), ...(token ? { quote_token: token } : {}) };
}

/**
 * LINE's docs ask that a reply token be used within one minute of the webhook, and it is good
 * for one reply (https://developers.line.biz/en/reference/messaging-api/#send-reply-message).
 * After that, a push to `to` (the group, room or user) still reaches them.
 */
export const LINE_REPLY_TOKEN_MS = 60_000;

/** `POST /v2/bot/message/reply {replyToken, messages: [{..., quoteToken}]}`, else `push {to, ...}`. */
export function lineReply({ ids, conversation, receivedAt }: ReplyTarget): ReplyParts {
  const params: Record<string, ReplyValue> = { to: conversation.id };
  if (ids.replyToken) params.replyToken = ids.replyToken;
  if (ids.quote_token) params.quoteToken = ids.quote_token;
  const quote = quoteOf(ids);
  return {
    params,
    ...(ids.message_id ? { messageId: ids.message_id } : {}),
    ...(quote ? { quote } : {}),
    ...(ids.replyToken ? { expiresAt: receivedAt + LINE_REPLY_TOKEN_MS } : {}),
  };
}
