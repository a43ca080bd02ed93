import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { z } from 'zod';
import { ConfigError, RequestError, SignatureError } from '../../core/errors.js';
import { mediaTypeOf, type ConversationType, type MediaRef, type MediaType, type Party } from '../../events/inbound.js';
import { defineAdapter, type AdapterChannel } from '../kit/descriptor.js';
import { eventBuilder } from '../kit/event.js';
import { deletion, deletionScenes } from './revision.js';
import { optionalText, requiredText } from '../kit/settings.js';
import { kindOf, MAX_TIMESTAMP_S, own, PayloadReader, type Json } from '../kit/shape.js';
import {
  checkFreshness,
  echoReply,
  headerOf,
  shapeError,
  type Adapter,
  type Freshness,
  type Normalized,
  type PlatformReply,
  type RawDelivery,
} from '../kit/types.js';
import type { ReplyParts, ReplyTarget, ReplyValue } from '../../events/reply.js';
import { quoteOf } from '../kit/reply.js';

const settings = z.strictObject({
  /** The bot's AppID (q.qq.com, 开发 > 开发设置): the bot id of every event of the channel. */
  appId: requiredText("the bot's AppID from q.qq.com"),
  /** The Bot Secret (AppSecret): the seed of the Ed25519 key pair that signs both ways. */
  secret: optionalText(),
});

/** QQ official bot, API v2, webhook mode. */
export const qqbot = defineAdapter({
  name: 'qqbot',
  // Openids are per bot: never the QQ numbers a OneBot channel (namespace `qq`) sees.
  namespace: 'qqbot',
  secret: { setting: 'secret', required: true },
  settings,
  // QQ bot API v2 docs (event-emit.md, send-receive/event.md): no retry schedule is given, only
  // that one msg_id may be pushed more than once: today's exact-id window (dedup.idTtlMs).
  retryHorizonMs: 300_000,
  create: qqbotAdapter,
});

/** PKCS#8 DER header of a raw 32-byte Ed25519 private key (RFC 8410). */
const ED25519_PKCS8 = Buffer.from('302e020100300506032b657004220420', 'hex');

/**
 * The key pair QQ derives from a Bot Secret (bot-docs sign.md): the secret repeated until it
 * has 32 bytes or more, its first 32 bytes the Ed25519 seed.
 */
export function qqbotKeys(secret: string): { privateKey: KeyObject; publicKey: KeyObject } {
  const bytes = Buffer.from(secret, 'utf8');
  const seed = Buffer.alloc(32);
  for (let at = 0; at < 32; at += bytes.length) bytes.copy(seed, at);
  const privateKey = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8, seed]), format: 'der', type: 'pkcs8' });
  return { privateKey, publicKey: createPublicKey(privateKey) };
}

/** The four message events (bot-docs send-receive/event.md); every other `t` is acknowledged and ignored. */
const scenes = new Map<string, { type: ConversationType; guild: boolean; mentioned: boolean }>([
  ['C2C_MESSAGE_CREATE', { type: 'private', guild: false, mentioned: false }],
  ['GROUP_AT_MESSAGE_CREATE', { type: 'group', guild: false, mentioned: true }],
  ['AT_MESSAGE_CREATE', { type: 'group', guild: true, mentioned: true }],
  ['DIRECT_MESSAGE_CREATE', { type: 'private', guild: true, mentioned: false }],
]);

const ACK: PlatformReply = { status: 200, body: { op: 12, d: 0 } };
/**
 * How far `X-Signature-Timestamp` may be from our clock. QQ documents none (sign.md); QQ signs
 * each push when it sends it. 2 min either way keeps a replay inside the 5 min exact-id window
 * (`retryHorizonMs`) even from a sender whose clock runs 2 min ahead: past it, refused.
 */
const FRESHNESS: Freshness = {
  field: 'X-Signature-Timestamp',
  unit: 's',
  toleranceMs: 120_000,
  limit: 'the 2 min allowed',
};
const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;
/** `<@!id>` (and `<@id>`), the mention markup of guild messages. */
const mentionMarkup = /<@!?([^<>\s]+)>( ?)/g;

/** The media type of an attachment's `content_type` (`image/png`, `video/mp4`, `voice`, `file`). */
function mediaKindOf(contentType: string | undefined): MediaType {
  if (contentType === 'voice') return 'audio';
  return contentType?.includes('/') ? mediaTypeOf(contentType) : 'document';
}

/**
 * QQ official bot webhooks: every request is signed with Ed25519 over `X-Signature-Timestamp`
 * + the raw body, by the key pair derived from the Bot Secret, and refused 2 min off our
 * clock. op 13 validates the callback URL (answered with our own signature), op 0 carries
 * events (answered `{"op":12,"d":0}` once recorded), op 1 is a heartbeat. QQ pushes one message
 * more than once by design: `d.id` is the platform id.
 */
export function qqbotAdapter(channel: AdapterChannel, options: z.output<typeof settings>): Adapter {
  const { appId } = options;
  // A shared namespace would let an openid meet a OneBot QQ number that happens to spell the same.
  if (channel.namespace !== 'qqbot') {
    throw new ConfigError(
      `channels[${channel.index}].namespace (channel "${channel.id}"): a qqbot channel's namespace is always "qqbot" (openids are per bot, never QQ numbers, so they must not share sessions or correlate with another channel); remove the setting`,
      { channel: channel.id },
    );
  }
  // Derived once per channel. The validation is answered, its request verified, even with `"verify": false`.
  const keys = options.secret ? qqbotKeys(options.secret) : undefined;
  const verifyKey = channel.verify ? keys?.publicKey : undefined;
  const namespace = channel.namespace;
  const buildEvent = eventBuilder({ channel: channel.id, adapter: 'qqbot', namespace, idPrefix: 'qqbot' });
  const fail = (problem: string) => shapeError(channel, 'a QQ bot webhook', problem);
  const context = { channel: channel.id, stage: 'adapter' };

  /** Throw the 401 that says why, unless QQ signed the delivery with the key pair of `publicKey`, within FRESHNESS. */
  function authenticate(delivery: RawDelivery, publicKey: KeyObject, missing = ''): void {
    const signature = headerOf(delivery, 'x-signature-ed25519');
    const timestamp = headerOf(delivery, 'x-signature-timestamp');
    if (!signature || !timestamp)
      throw new SignatureError(
        `Signature missing on channel "${channel.id}": ${missing}X-Signature-Ed25519 and X-Signature-Timestamp headers are required`,
        context,
      );
    const bytes = /^[0-9a-f]{128}$/i.test(signature) ? Buffer.from(signature, 'hex') : undefined;
    // A canonical Ed25519 signature has the top three bits of its last byte clear (sign.md).
    if (!bytes || ((bytes[63] as number) & 224) !== 0) {
      throw new SignatureError(
        `Signature mismatch on channel "${channel.id}": X-Signature-Ed25519 is not a 64-byte Ed25519 signature in hex`,
        context,
      );
    }
    checkFreshness(channel, timestamp, delivery.now, FRESHNESS);
    if (!verify(null, Buffer.concat([Buffer.from(timestamp), delivery.body]), publicKey, bytes)) {
      throw new SignatureError(
        `Signature mismatch on channel "${channel.id}": X-Signature-Ed25519 does not match X-Signature-Timestamp and the body (is channels[${channel.index}].secret this bot's Bot Secret?)`,
        context,
      );
    }
  }

  /**
   * op 13: `{plain_token, signature}`, the signature over `event_ts + plain_token`. The answer is
   * a signature by the Bot Secret, and QQ signs webhooks with the same key over timestamp + body:
   * signing what an unsigned request chose would make a valid signature for any webhook. So the
   * request is verified even with `"verify": false` (QQ signs it too; botgo checks it).
   */
  function validation(read: PayloadReader, payload: Json, delivery: RawDelivery): PlatformReply {
    const d = read.object(own(payload, 'd'), 'd', 'an object {plain_token, event_ts}');
    const plainToken = read.text(own(d, 'plain_token'), 'd.plain_token');
    const eventTs = read.text(own(d, 'event_ts'), 'd.event_ts');
    if (!keys)
      throw new RequestError(
        'no_secret',
        400,
        `Cannot answer the QQ callback URL validation on channel "${channel.id}": channels[${channel.index}].secret (the Bot Secret) signs the answer and is not set`,
        context,
      );
    if (!verifyKey)
      authenticate(
        delivery,
        keys.publicKey,
        'the callback URL validation (op 13) is answered with a signature by the Bot Secret, so it is verified even with "verify": false; ',
      );
    return echoReply({
      plain_token: plainToken,
      signature: sign(null, Buffer.from(eventTs + plainToken), keys.privateKey).toString('hex'),
    });
  }

  /** Text of a guild message: our bot's mention removed, other mentions as `@name`. */
  function guildText(raw: string, bots: ReadonlySet<string>, names: ReadonlyMap<string, string>): string {
    return raw.replace(mentionMarkup, (_markup, id: string, space: string) =>
      bots.has(id) ? '' : `@${names.get(id) ?? id}${space}`,
    );
  }

  function timestampOf(value: unknown, now: number): number {
    if (value === undefined || value === null) return Math.floor(now / 1000);
    const ms = typeof value === 'string' && rfc3339.test(value) ? Date.parse(value) : Number.NaN;
    if (ms >= 0 && ms < MAX_TIMESTAMP_S * 1000) return Math.floor(ms / 1000);
    throw fail(
      `d.timestamp must be an RFC 3339 time from 1970 to the year 3000 (like 2023-11-06T13:37:18+08:00), got ${kindOf(value)}`,
    );
  }

  function media(read: PayloadReader, d: Json): MediaRef[] {
    return read.optArray(own(d, 'attachments'), 'd.attachments').flatMap((item, i): MediaRef[] => {
      const at = `d.attachments[${i}]`;
      const attachment = read.object(item, at, 'an attachment {content_type, filename, url, size, ...}');
      const url = read.optText(own(attachment, 'url'), `${at}.url`);
      if (!url) return [];
      const contentType = read.optText(own(attachment, 'content_type'), `${at}.content_type`);
      const size = read.optNumber(own(attachment, 'size'), `${at}.size`);
      const fileName = read.optText(own(attachment, 'filename'), `${at}.filename`);
      return [
        {
          // QQ sends some attachment URLs without a scheme (`gchat.qpic.cn/...`).
          url: /^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? url : `https://${url.replace(/^\/\//, '')}`,
          type: mediaKindOf(contentType),
          ...(contentType?.includes('/') ? { mimeType: contentType } : {}),
          ...(size && size > 0 ? { size } : {}),
          ...(fileName ? { fileName } : {}),
        },
      ];
    });
  }

  /** One op 0 dispatch: a message event, or nothing but the acknowledgement (counted ignored). */
  function dispatch(read: PayloadReader, payload: Json, now: number): Normalized {
    const type = read.optText(own(payload, 't'), 't');
    const deleted = type === undefined ? undefined : deletionScenes.get(type);
    if (deleted) {
      const notice = deletion(read, payload, type as string, deleted.direct, {
        namespace,
        botId: appId,
        now,
        buildEvent,
      });
      return notice ? { events: [notice], reply: ACK } : { events: [], ignored: 1, reply: ACK };
    }
    const scene = type === undefined ? undefined : scenes.get(type);
    if (!scene) return { events: [], ignored: 1, reply: ACK };
    const d = read.object(own(payload, 'd'), 'd', 'a message object {id, author, content, ...}');
    const author = read.object(own(d, 'author'), 'd.author', 'an object {user_openid | member_openid | id, ...}');
    // A guild message of another bot is a bot message, never a user's.
    if (scene.guild && own(author, 'bot') === true) return { events: [], ignored: 1, reply: ACK };
    const id = read.text(own(d, 'id'), 'd.id');
    const raw = read.optText(own(d, 'content'), 'd.content') ?? '';
    const fields: Record<string, string> = { message_id: id, event_type: type as string };
    const eventId = read.optText(own(payload, 'id'), 'id');
    if (eventId) fields.event_id = eventId;
    // A quote names only the quoted message's id (message_reference.message_id): its author,
    // a bot or not, is not in the event.
    const reference = read.optObject(own(d, 'message_reference'), 'd.message_reference');
    const quoted = reference && read.optText(own(reference, 'message_id'), 'd.message_reference.message_id');
    if (quoted) fields.reply_to = quoted;
    let conversationId: string;
    let sessionKey: string | undefined;
    let sender: Party;
    let text = raw;
    // GROUP_AT_MESSAGE_CREATE and AT_MESSAGE_CREATE come only for a message that @s the bot
    // (bot.q.qq.com/wiki, send-receive/event.md): it is addressed to the bot by its type, so its id comes first.
    const mentions = scene.mentioned ? [appId] : [];
    if (!scene.guild) {
      const openidKey = scene.type === 'group' ? 'member_openid' : 'user_openid';
      sender = { id: read.text(own(author, openidKey), `d.author.${openidKey}`) };
      conversationId = scene.type === 'group' ? read.text(own(d, 'group_openid'), 'd.group_openid') : sender.id;
      fields[openidKey] = sender.id;
      if (scene.type === 'group') fields.group_openid = conversationId;
    } else {
      const name = read.optText(own(author, 'username'), 'd.author.username');
      sender = { id: read.text(own(author, 'id'), 'd.author.id'), ...(name ? { name } : {}) };
      const guildId = read.text(own(d, 'guild_id'), 'd.guild_id');
      fields.guild_id = guildId;
      if (scene.type === 'group') {
        conversationId = read.text(own(d, 'channel_id'), 'd.channel_id');
        fields.channel_id = conversationId;
        sessionKey = `${namespace}:channel:${conversationId}`;
      } else {
        conversationId = guildId;
        sessionKey = `${namespace}:dm:${guildId}`;
      }
      const bots = new Set<string>();
      const names = new Map<string, string>();
      read.optArray(own(d, 'mentions'), 'd.mentions').forEach((item, i) => {
        const user = read.object(item, `d.mentions[${i}]`, 'a user object {id, username, bot}');
        const userId = read.optText(own(user, 'id'), `d.mentions[${i}].id`);
        if (!userId) return;
        const username = read.optText(own(user, 'username'), `d.mentions[${i}].username`);
        if (username) names.set(userId, username);
        // The webhook never names our bot's guild user id: a guild @ message is delivered to
        // the bots it mentions, so the mentioned bots' markup is the address, not the text.
        if (own(user, 'bot') === true) bots.add(userId);
        else mentions.push(userId);
      });
      text = guildText(raw, bots, names);
    }
    const inbound = buildEvent({
      kind: 'message',
      detail: scene.type,
      botId: appId,
      conversation: { type: scene.type, id: conversationId },
      sessionKey,
      sender,
      platformId: id,
      text: text.trim(),
      media: media(read, d),
      mentions,
      fields,
      timestamp: timestampOf(own(d, 'timestamp'), now),
      raw: d,
    });
    return { events: [inbound], reply: ACK };
  }

  return {
    name: 'qqbot',
    replyTo: qqbotReply,
    channel: channel.id,
    namespace,
    botIds: [appId],

    verify(delivery) {
      if (verifyKey) authenticate(delivery, verifyKey);
    },

    normalize(body, delivery): Normalized {
      const read = new PayloadReader(fail);
      const payload = read.object(body, 'the body', 'a QQ bot payload {op, d, t, ...}');
      const op = own(payload, 'op');
      switch (op) {
        case 0:
          return dispatch(read, payload, delivery.now);
        case 13:
          return { events: [], reply: validation(read, payload, delivery) };
        case 1: {
          // A heartbeat carries the last seq (botgo answers it even on the webhook).
          const seq = own(payload, 'd') ?? 0;
          if (!Number.isSafeInteger(seq) || (seq as number) < 0)
            throw fail(`d of a heartbeat (op 1) must be the last seq, a whole number, got ${kindOf(seq)}`);
          return { events: [], reply: { status: 200, body: { op: 11, d: seq } } };
        }
        default:
          throw fail(
            `op must be 0 (dispatch), 1 (heartbeat) or 13 (callback URL validation), got ${op === undefined ? 'none' : kindOf(op)}`,
          );
      }
    },
  };
}

/** QQ takes a passive reply (one carrying `msg_id`) for 5 minutes after the message (QQ bot docs, 被动消息). */
export const QQBOT_PASSIVE_REPLY_MS = 300_000;

/**
 * A passive reply: `POST /v2/groups/{group_openid}/messages`, `/v2/users/{openid}/messages`,
 * `/channels/{channel_id}/messages` or `/dms/{guild_id}/messages`, with `{msg_id, content, ...}`.
 */
export function qqbotReply({ ids, conversation, receivedAt }: ReplyTarget): ReplyParts {
  const params: Record<string, ReplyValue> = ids.group_openid
    ? { group_openid: ids.group_openid }
    : ids.user_openid
      ? { openid: ids.user_openid }
      : ids.channel_id
        ? { channel_id: ids.channel_id }
        : ids.guild_id
          ? { guild_id: ids.guild_id }
          : conversation.type === 'group'
            ? { group_openid: conversation.id }
            : { openid: conversation.id };
  if (ids.message_id) params.msg_id = ids.message_id;
  const quote = quoteOf(ids);
  return {
    params,
    ...(ids.message_id ? { messageId: ids.message_id, expiresAt: receivedAt + QQBOT_PASSIVE_REPLY_MS } : {}),
    ...(quote ? { quote } : {}),
  };
}
