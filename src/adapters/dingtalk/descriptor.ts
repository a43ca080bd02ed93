import { z } from 'zod';
import { MediaError, SignatureError } from '../../core/errors.js';
import type { ConversationType, MediaRef, MediaType } from '../../events/inbound.js';
import { hmac } from '../../core/signing.js';
import type { AdapterContext } from '../kit/access-token.js';
import { dingtalkAccessToken, dingtalkDownloadUrl } from './api.js';
import { defineAdapter, type AdapterChannel } from '../kit/descriptor.js';
import { eventBuilder } from '../kit/event.js';
import { baseUrl, optionalText } from '../kit/settings.js';
import { kindOf, own, PayloadReader, type Json } from '../kit/shape.js';
import {
  checkFreshness,
  checkSignature,
  headerOf,
  shapeError,
  verifiedSecret,
  type Adapter,
  type Freshness,
  type Normalized,
  type PlatformReply,
} from '../kit/types.js';
import type { ReplyParts, ReplyTarget, ReplyValue } from '../../events/reply.js';

const settings = z
  .strictObject({
    /** The app's AppSecret (Client Secret): signs every callback, and gets the app access token. */
    appSecret: optionalText(),
    /** The app's AppKey (Client ID): with appSecret, gets the access token that downloads files. */
    clientId: optionalText(),
    /**
     * The robot's RobotCode: our bot id, and the robot files are downloaded for. @default clientId
     * (an internal app's robot has the app's AppKey as its code)
     */
    robotCode: optionalText(),
    /** DingTalk's API (access token and file downloads). */
    apiBaseUrl: baseUrl('https://api.dingtalk.com'),
  })
  .check((ctx) => {
    if (!/^https?:\/\/[^\s/]/i.test(ctx.value.apiBaseUrl)) {
      ctx.issues.push({
        code: 'custom',
        path: ['apiBaseUrl'],
        message: "must be an http:// or https:// URL (DingTalk's is https://api.dingtalk.com)",
        input: ctx.value,
      });
    }
  });

/** DingTalk enterprise-internal robot, HTTP callback mode. */
export const dingtalk = defineAdapter({
  name: 'dingtalk',
  namespace: 'dingtalk',
  secret: { setting: 'appSecret', required: true },
  settings,
  // DingTalk documents no retry schedule for HTTP-mode callbacks (PLATFORMS.md §5). What sizes
  // the window is the signature: it covers the `timestamp` header, not the body, and stays
  // valid for 1 h, so a captured delivery can be replayed for an hour; only its msgId (the
  // exact-id claim) tells the replay from a new message, so that claim must outlive the hour.
  retryHorizonMs: 3_600_000,
  // The timestamp passes within 1 h either way of our clock (FRESHNESS below).
  replayHorizonMs: () => 2 * FRESHNESS.toleranceMs,
  create: dingtalkAdapter,
});

/** How far the `timestamp` header may be from our clock (DingTalk's callback docs: 1 hour). */
const FRESHNESS: Freshness = {
  field: 'the timestamp header',
  unit: 'ms',
  toleranceMs: 3_600_000,
  limit: 'the 1 h DingTalk allows',
};
/** What DingTalk expects back from a callback. */
const ACK: PlatformReply = { status: 200, body: {} };
const conversationTypes = new Map<string, ConversationType>([
  ['1', 'private'],
  ['2', 'group'],
]);
/** The media of each message type that carries a file in `content.downloadCode`. */
const fileTypes = new Map<string, MediaType>([
  ['picture', 'image'],
  ['file', 'document'],
  ['audio', 'audio'],
  ['video', 'video'],
]);

/** base64(HMAC-SHA256(key = appSecret, timestamp + "\n" + appSecret)): DingTalk's `sign` header. */
export function dingtalkSign(appSecret: string, timestamp: string): string {
  return hmac('sha256', appSecret, `${timestamp}\n${appSecret}`).toString('base64');
}

/**
 * DingTalk enterprise-internal robot callbacks (HTTP mode): headers `timestamp` (ms) and
 * `sign`, the HMAC of the timestamp and AppSecret, refused more than 1 h from now. The sign
 * does not cover the body: a replay of a captured delivery inside the hour verifies, and only
 * the exact-id dedup on `msgId` (the platform id, kept for `retryHorizonMs`) stops it.
 * Answered `200 {}`. Files come as `downloadCode`s, exchanged for a URL with the app token.
 */
export function dingtalkAdapter(
  channel: AdapterChannel,
  options: z.output<typeof settings>,
  context: AdapterContext,
): Adapter {
  const signingSecret = verifiedSecret(channel, options.appSecret);
  const { appSecret, clientId, apiBaseUrl } = options;
  const robotCode = options.robotCode ?? clientId;
  const namespace = channel.namespace;
  const where = `channels[${channel.index}]`;
  const buildEvent = eventBuilder({ channel: channel.id, adapter: 'dingtalk', namespace, idPrefix: 'dingtalk' });
  const fail = (problem: string) => shapeError(channel, 'a DingTalk robot message', problem);
  const errorContext = { channel: channel.id, stage: 'adapter' };
  const token = clientId && appSecret ? dingtalkAccessToken(context, apiBaseUrl, clientId, appSecret) : undefined;

  /** The file of a message type that carries one in `content`. */
  function fileOf(read: PayloadReader, content: Json, type: MediaType): MediaRef | undefined {
    const code = read.optText(own(content, 'downloadCode'), 'content.downloadCode');
    if (!code) return undefined;
    const fileName = read.optText(own(content, 'fileName'), 'content.fileName');
    return { ref: code, type, ...(fileName ? { fileName } : {}) };
  }

  /** A richText message: its text items joined, its pictures as media. */
  function richText(read: PayloadReader, content: Json): { text: string; media: MediaRef[] } {
    const texts: string[] = [];
    const media: MediaRef[] = [];
    read.array(own(content, 'richText'), 'content.richText').forEach((item, i) => {
      const at = `content.richText[${i}]`;
      const part = read.object(item, at, 'an item {text} or {type: "picture", downloadCode}');
      const text = read.optText(own(part, 'text'), `${at}.text`);
      if (text !== undefined && text.trim() !== '') texts.push(text.trim());
      const code = read.optText(own(part, 'downloadCode'), `${at}.downloadCode`);
      if (code) media.push({ ref: code, type: 'image' });
    });
    return { text: texts.join('\n'), media };
  }

  /** Text and media of a message, by `msgtype`; undefined for a type we do not read. */
  function contentOf(
    read: PayloadReader,
    message: Json,
    msgtype: string,
  ): { text: string; media: MediaRef[] } | undefined {
    if (msgtype === 'text') {
      const text = read.object(own(message, 'text'), 'text', 'an object {content}');
      return { text: (read.optText(own(text, 'content'), 'text.content') ?? '').trim(), media: [] };
    }
    const type = fileTypes.get(msgtype);
    if (msgtype !== 'richText' && !type) return undefined;
    const content = read.object(
      own(message, 'content'),
      'content',
      msgtype === 'richText' ? 'an object {richText: [...]}' : 'an object {downloadCode, ...}',
    );
    if (!type) return richText(read, content);
    const file = fileOf(read, content, type);
    // A voice message carries DingTalk's speech recognition, when it made one.
    const text =
      msgtype === 'audio' ? (read.optText(own(content, 'recognition'), 'content.recognition') ?? '').trim() : '';
    return { text, media: file ? [file] : [] };
  }

  /** Our bot: the channel's robot (robotCode, else clientId), else the message's robotCode, else its chatbotUserId. */
  function botOf(read: PayloadReader, message: Json): string | undefined {
    const named = read.optText(own(message, 'robotCode'), 'robotCode') || undefined;
    if (robotCode && named && named !== robotCode) {
      const setting = options.robotCode ? `${where}.robotCode` : `${where}.clientId (robotCode unset)`;
      throw fail(
        `robotCode "${named.slice(0, 64)}" is not this channel's robot, ${setting} "${robotCode}": set robotCode to the robot's RobotCode, or point that robot's callback at its own channel`,
      );
    }
    return robotCode ?? named ?? (read.optText(own(message, 'chatbotUserId'), 'chatbotUserId') || undefined);
  }

  return {
    name: 'dingtalk',
    replyTo: dingtalkReply,
    channel: channel.id,
    namespace,
    botIds: robotCode ? [robotCode] : [],

    verify(delivery) {
      if (!signingSecret) return;
      const timestamp = headerOf(delivery, 'timestamp');
      const sign = headerOf(delivery, 'sign');
      if (!timestamp || !sign)
        throw new SignatureError(
          `Signature missing on channel "${channel.id}": the timestamp and sign headers are required (DingTalk signs every robot callback)`,
          errorContext,
        );
      checkFreshness(channel, timestamp, delivery.now, FRESHNESS);
      checkSignature(
        channel,
        'sign',
        sign,
        dingtalkSign(signingSecret, timestamp),
        `does not match the timestamp (is ${where}.appSecret this app's AppSecret?)`,
      );
    },

    normalize(body, delivery): Normalized {
      const read = new PayloadReader(fail);
      const message = read.object(body, 'the body', 'a robot message {msgId, msgtype, conversationId, ...}');
      const msgtype = read.text(own(message, 'msgtype'), 'msgtype');
      const content = contentOf(read, message, msgtype);
      if (!content) return { events: [], ignored: 1, reply: ACK };
      const msgId = read.text(own(message, 'msgId'), 'msgId');
      const conversationId = read.text(own(message, 'conversationId'), 'conversationId');
      const rawType = read.optText(own(message, 'conversationType'), 'conversationType');
      const type = rawType === undefined ? undefined : conversationTypes.get(rawType);
      if (!type)
        throw fail(
          `conversationType must be "1" (single chat) or "2" (group chat), got ${kindOf(own(message, 'conversationType'))}`,
        );
      const field = (key: string) => read.optText(own(message, key), key) || undefined;
      const staffId = field('senderStaffId');
      const senderId = field('senderId');
      const id = staffId ?? senderId;
      if (!id) throw fail('senderStaffId or senderId is required (a non-empty string)');
      const name = field('senderNick');
      const botId = botOf(read, message);
      const chatbotUserId = field('chatbotUserId');
      const mentions: string[] = [];
      // DingTalk says whether our robot was @-mentioned; atUsers names everyone who was
      // (the robot among them by its chatbotUserId), by staff id where the user has one.
      if (own(message, 'isInAtList') === true && botId) mentions.push(botId);
      read.optArray(own(message, 'atUsers'), 'atUsers').forEach((item, i) => {
        const user = read.object(item, `atUsers[${i}]`, 'an object {dingtalkId, staffId}');
        const dingtalkId = read.optText(own(user, 'dingtalkId'), `atUsers[${i}].dingtalkId`);
        const mentioned = read.optText(own(user, 'staffId'), `atUsers[${i}].staffId`) || dingtalkId;
        if (mentioned && dingtalkId !== chatbotUserId && !mentions.includes(mentioned)) mentions.push(mentioned);
      });
      // The robot callback carries no quoted message (no field of it in the Stream SDKs'
      // ChatbotMessage): no DingTalk message here is a reply.
      const fields: Record<string, string> = { msg_id: msgId, msgtype, conversation_id: conversationId };
      for (const [key, name] of [
        ['senderId', 'sender_id'],
        ['senderStaffId', 'sender_staff_id'],
        ['senderCorpId', 'sender_corp_id'],
        ['chatbotUserId', 'chatbot_user_id'],
        ['conversationTitle', 'conversation_title'],
        ['sessionWebhook', 'session_webhook'],
        ['sessionWebhookExpiredTime', 'session_webhook_expired_time'],
      ] as const) {
        const value = field(key);
        if (value) fields[name] = value;
      }
      if (botId) fields.robot_code = botId;
      const event = buildEvent({
        kind: 'message',
        detail: type,
        botId,
        conversation: { type, id: conversationId },
        sender: { id, ...(name ? { name } : {}) },
        platformId: msgId,
        text: content.text,
        media: content.media,
        mentions,
        fields,
        timestamp: read.timestamp(own(message, 'createAt'), 'createAt', 'ms', delivery.now),
        raw: message,
      });
      return { events: [event], reply: ACK };
    },

    async resolveMedia(ref, signal) {
      if (!token || !robotCode)
        throw new MediaError(
          'bad_url',
          `${where}.clientId and ${where}.appSecret are needed to download DingTalk files (they get the app access token)`,
          false,
        );
      return { url: await dingtalkDownloadUrl(token, apiBaseUrl, robotCode, ref.ref ?? '', signal) };
    },
  };
}

/**
 * `POST <sessionWebhook>` until `sessionWebhookExpiredTime`; after it, the robot APIs:
 * `groupMessages/send {robotCode, openConversationId}` or `oToMessages/batchSend {robotCode, userIds: [userId]}`.
 */
export function dingtalkReply({ ids, conversation, sender }: ReplyTarget): ReplyParts {
  const params: Record<string, ReplyValue> =
    conversation.type === 'group'
      ? { openConversationId: conversation.id }
      : { userId: ids.sender_staff_id ?? sender.id };
  if (ids.robot_code) params.robotCode = ids.robot_code;
  if (ids.session_webhook) params.sessionWebhook = ids.session_webhook;
  const expires = Number(ids.session_webhook_expired_time);
  return {
    params,
    ...(ids.msg_id ? { messageId: ids.msg_id } : {}),
    ...(ids.session_webhook && Number.isSafeInteger(expires) && expires > 0 ? { expiresAt: expires } : {}),
  };
}
