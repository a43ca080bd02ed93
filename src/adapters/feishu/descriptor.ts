import { createHash } from 'node:crypto';
import { z } from 'zod';
import { MediaError, RequestError, SignatureError } from '../../core/errors.js';
import { safeEqual } from '../../core/signing.js';
import type { AdapterContext } from '../kit/access-token.js';
import { CbcBlocks } from '../kit/cbc.js';
import { defineAdapter, type AdapterChannel } from '../kit/descriptor.js';
import { eventBuilder } from '../kit/event.js';
import { feishuGet, feishuTenantToken, resourceDownload } from './api.js';
import { feishuForwardNodes } from './forward.js';
import { feishuContent } from './message.js';
import { baseUrl, optionalText } from '../kit/settings.js';
import { own, PayloadReader, type Json } from '../kit/shape.js';
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
import type { ReplyParts, ReplyTarget } from '../../events/reply.js';
import { quoteOf } from '../kit/reply.js';

const settings = z.strictObject({
  /** Event Subscriptions > Verification Token: checked on the URL verification and on every event (`header.token`). */
  verificationToken: optionalText(),
  /** Event Subscriptions > Encrypt Key: bodies arrive encrypted and signed (`X-Lark-Signature`). */
  encryptKey: optionalText(),
  /** The app's App ID: our bot id, and (with appSecret) the tenant token that downloads images and files and reads merged forwards. */
  appId: optionalText(),
  appSecret: optionalText(),
  /** The bot's open_id: an @-mention of it puts the bot in `mentionedBots`. */
  botOpenId: optionalText(),
  /** Feishu's API; Lark's is https://open.larksuite.com. */
  apiBaseUrl: baseUrl('https://open.feishu.cn'),
});

/** Feishu and Lark custom apps, Event Subscriptions v2 over HTTP. */
export const feishu = defineAdapter({
  name: 'feishu',
  namespace: 'feishu',
  secret: { setting: 'verificationToken', required: true },
  settings,
  // Feishu re-pushes an event not answered 200 within 3 s after 15 s, 5 min, 1 h and 6 h
  // (open.feishu.cn event subscription docs; PLATFORMS.md §4): the last retry lands ~7.1 h
  // after the first delivery.
  retryHorizonMs: 7.1 * 3_600_000,
  create: feishuAdapter,
});

/** What Feishu expects back from an event. */
const ACK: PlatformReply = { status: 200, body: {} };
/**
 * How far `X-Lark-Request-Timestamp` (seconds) may be from our clock; Feishu documents none.
 * 1 h takes the retries after 15 s and 5 min even if a retry kept its first signature, and a
 * clock that is off by minutes; a replay inside it is a duplicate by `header.event_id` (claimed
 * 7.1 h, more than twice the hour), and past it the signature no longer counts.
 */
const FRESHNESS: Freshness = {
  field: 'X-Lark-Request-Timestamp',
  unit: 's',
  toleranceMs: 3_600_000,
  limit: 'the 1 h allowed',
};

/** Opens `encrypt` fields: AES-256-CBC, key SHA-256(encryptKey), IV the first 16 bytes, PKCS#7. */
export class FeishuCipher {
  private readonly blocks: CbcBlocks;

  constructor(encryptKey: string) {
    this.blocks = new CbcBlocks(createHash('sha256').update(encryptKey).digest());
  }

  /** The plaintext bytes; throws when it is not base64 whole blocks with PKCS#7 padding (a tampered body, another key). */
  open(encrypted: string): Buffer {
    // Not base64-checked: a tampered body fails the signature first, and then the padding.
    const data = Buffer.from(encrypted, 'base64');
    if (data.length < 32 || data.length % 16 !== 0)
      throw new Error('the ciphertext is not whole AES blocks after a 16-byte IV');
    const plain = this.blocks.open(data.subarray(16), data.subarray(0, 16));
    const pad = plain[plain.length - 1] as number;
    let padded = pad >= 1 && pad <= 16;
    for (let i = plain.length - pad; padded && i < plain.length; i++) padded = plain[i] === pad;
    if (!padded) throw new Error('its padding is not PKCS#7');
    return plain.subarray(0, plain.length - pad);
  }
}

const NOT_BASE64 = /[^A-Za-z0-9+/=]/;
const HEAD = /^\{[ \t\n\r]*"encrypt"[ \t\n\r]*:[ \t\n\r]*"/;

/** Whether the character at `at` is JSON white space (RFC 8259: space, tab, line feed, carriage return). */
const isSpace = (text: string, at: number): boolean => {
  const code = text.charCodeAt(at);
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
};

/**
 * The ciphertext of a body that is only `{"encrypt":"<base64>"}`, the envelope Feishu sends,
 * read without a JSON parse: 1.1 against 1.5 µs with the limits scan, JSON.parse and the
 * forbidden-key search. Base64 holds no quote, backslash, control or non-ASCII character, so JSON.parse
 * would give this very string (the body is decoded as latin1: a byte past ASCII stays a character
 * past it and is refused here); any other body returns undefined and is parsed as JSON.
 */
export function sealedCiphertext(raw: Buffer): string | undefined {
  const text = raw.toString('latin1');
  const head = HEAD.exec(text);
  if (!head) return undefined;
  let end = text.length - 1;
  while (end > 0 && isSpace(text, end)) end--;
  if (text.charCodeAt(end--) !== 0x7d /* } */) return undefined;
  while (end > 0 && isSpace(text, end)) end--;
  if (end < head[0].length || text.charCodeAt(end) !== 0x22 /* " */) return undefined;
  const encrypted = text.slice(head[0].length, end);
  return NOT_BASE64.test(encrypted) ? undefined : encrypted;
}

/** Decrypt an `encrypt` field to text (the published vectors). */
export function feishuDecrypt(encryptKey: string, encrypted: string): string {
  return new FeishuCipher(encryptKey).open(encrypted).toString('utf8');
}

/** hex(sha256(timestamp + nonce + encryptKey + raw body)): Feishu's `X-Lark-Signature`. */
export function feishuSignature(timestamp: string, nonce: string, encryptKey: string, body: Buffer): string {
  return createHash('sha256')
    .update(timestamp + nonce + encryptKey)
    .update(body)
    .digest('hex');
}

/**
 * Feishu / Lark event subscriptions (schema 2.0). With an Encrypt Key, bodies are
 * `{"encrypt"}` and signed over the raw bytes (`X-Lark-Signature`), refused when
 * `X-Lark-Request-Timestamp` is 1 h off our clock; the URL verification is never signed, so an
 * unsigned delivery is taken only as that. The Verification Token is
 * checked on the verification and on every event (`header.token`). `header.event_id` is the
 * platform id: Feishu's retries for ~7 h are duplicates. Answered `200 {}`.
 */
export function feishuAdapter(
  channel: AdapterChannel,
  options: z.output<typeof settings>,
  context: AdapterContext,
): Adapter {
  const verifying = channel.verify;
  const { verificationToken, encryptKey, appId, appSecret, botOpenId, apiBaseUrl } = options;
  const cipher = encryptKey ? new FeishuCipher(encryptKey) : undefined;
  const namespace = channel.namespace;
  const where = `channels[${channel.index}]`;
  const buildEvent = eventBuilder({ channel: channel.id, adapter: 'feishu', namespace, idPrefix: 'feishu' });
  const fail = (problem: string) => shapeError(channel, 'a Feishu event', problem);
  const errorContext = { channel: channel.id, stage: 'adapter' };
  const token = appId && appSecret ? feishuTenantToken(context, apiBaseUrl, appId, appSecret) : undefined;
  /** Deliveries that came without a signature although one is required: only a URL verification may. */
  const unsigned = new WeakSet<RawDelivery>();
  /** JSON within the service's limits, as the pipeline hands it to `parseBody` (plain JSON.parse before that). */
  let json = (bytes: Buffer): unknown => JSON.parse(bytes.toString('utf8'));
  /** A message's `content`, a JSON string, parsed within those limits. */
  const parseContent = (text: string): unknown => {
    try {
      return json(Buffer.from(text, 'utf8'));
    } catch (error) {
      if (error instanceof RequestError) throw error;
      throw fail(`event.message.content must be a JSON object in a string: ${(error as Error).message}`);
    }
  };

  /** The plaintext of an `encrypt` field, or the 401 saying which setting to check. */
  function opened(encrypted: string): Buffer {
    try {
      return (cipher as FeishuCipher).open(encrypted);
    } catch (error) {
      throw new SignatureError(
        `Cannot decrypt the body on channel "${channel.id}" (${(error as Error).message}): is ${where}.encryptKey the app's Encrypt Key?`,
        errorContext,
      );
    }
  }

  function checkToken(given: unknown, what: string): void {
    if (!verifying || !verificationToken) return;
    if (typeof given !== 'string' || !safeEqual(given, verificationToken)) {
      throw new SignatureError(
        `Token mismatch on channel "${channel.id}": ${what} is not ${where}.verificationToken (Event Subscriptions > Verification Token)`,
        errorContext,
      );
    }
  }

  return {
    name: 'feishu',
    replyTo: feishuReply,
    channel: channel.id,
    namespace,
    botIds: appId ? [appId] : [],

    verify(delivery) {
      if (!verifying || !encryptKey) return;
      const timestamp = headerOf(delivery, 'x-lark-request-timestamp');
      const nonce = headerOf(delivery, 'x-lark-request-nonce');
      const signature = headerOf(delivery, 'x-lark-signature');
      if (timestamp === undefined && nonce === undefined && signature === undefined) {
        unsigned.add(delivery);
        return;
      }
      if (!timestamp || nonce === undefined || !signature) {
        throw new SignatureError(
          `Signature missing on channel "${channel.id}": X-Lark-Request-Timestamp, X-Lark-Request-Nonce and X-Lark-Signature go together`,
          errorContext,
        );
      }
      checkFreshness(channel, timestamp, delivery.now, FRESHNESS);
      if (!safeEqual(signature.toLowerCase(), feishuSignature(timestamp, nonce, encryptKey, delivery.body))) {
        throw new SignatureError(
          `Signature mismatch on channel "${channel.id}": X-Lark-Signature does not match the body (is ${where}.encryptKey the app's Encrypt Key?)`,
          errorContext,
        );
      }
    },

    parseBody(raw, _limits, within) {
      json = within;
      const sealed = cipher ? sealedCiphertext(raw) : undefined;
      if (sealed !== undefined) return within(opened(sealed));
      const envelope = within(raw);
      const outer =
        typeof envelope === 'object' && envelope !== null && !Array.isArray(envelope) ? (envelope as Json) : undefined;
      const encrypted = outer ? own(outer, 'encrypt') : undefined;
      if (encrypted === undefined) {
        if (cipher && verifying && own(outer ?? {}, 'type') !== 'url_verification') {
          throw new SignatureError(
            `Channel "${channel.id}" has an encryptKey, so events must arrive encrypted ({"encrypt": ...})`,
            errorContext,
          );
        }
        return envelope;
      }
      if (typeof encrypted !== 'string') throw fail('encrypt must be a base64 string');
      if (!cipher)
        throw new RequestError(
          'bad_shape',
          400,
          `Channel "${channel.id}" got an encrypted body but has no encryptKey: set ${where}.encryptKey to the app's Encrypt Key`,
          errorContext,
        );
      return within(opened(encrypted));
    },

    normalize(envelope, delivery): Normalized {
      const read = new PayloadReader(fail);
      const body = read.object(envelope, 'the body', 'an event {schema: "2.0", header, event} or a url_verification');
      if (own(body, 'type') === 'url_verification') {
        checkToken(own(body, 'token'), 'the url_verification token');
        return { events: [], reply: echoReply({ challenge: read.text(own(body, 'challenge'), 'challenge') }) };
      }
      if (unsigned.has(delivery)) {
        throw new SignatureError(
          `Signature missing on channel "${channel.id}": with an encryptKey every event carries X-Lark-Signature`,
          errorContext,
        );
      }
      if (own(body, 'schema') !== '2.0')
        throw fail(
          'schema must be "2.0": this channel reads Event Subscriptions v2 (v1 events, with uuid, are not supported)',
        );
      const header = read.object(own(body, 'header'), 'header', 'an object {event_id, event_type, token, ...}');
      checkToken(own(header, 'token'), 'header.token');
      const eventType = read.text(own(header, 'event_type'), 'header.event_type');
      if (eventType !== 'im.message.receive_v1') return { events: [], ignored: 1, reply: ACK };
      const eventId = read.text(own(header, 'event_id'), 'header.event_id');
      const event = read.object(own(body, 'event'), 'event');
      const sender = read.object(own(event, 'sender'), 'event.sender', 'an object {sender_id, sender_type}');
      // Messages of bots (ours included) never become user messages.
      if (own(sender, 'sender_type') === 'app') return { events: [], ignored: 1, reply: ACK };
      const ids = read.object(
        own(sender, 'sender_id'),
        'event.sender.sender_id',
        'an object {open_id, union_id, user_id}',
      );
      const senderId =
        read.optText(own(ids, 'open_id'), 'event.sender.sender_id.open_id') ||
        read.optText(own(ids, 'user_id'), 'event.sender.sender_id.user_id');
      if (!senderId) throw fail('event.sender.sender_id.open_id is required');
      const message = read.object(
        own(event, 'message'),
        'event.message',
        'an object {message_id, chat_id, chat_type, message_type, content}',
      );
      const messageId = read.text(own(message, 'message_id'), 'event.message.message_id');
      const chatId = read.text(own(message, 'chat_id'), 'event.message.chat_id');
      const chatType = read.text(own(message, 'chat_type'), 'event.message.chat_type');
      const messageType = read.text(own(message, 'message_type'), 'event.message.message_type');
      const content = feishuContent(read, message, messageType, messageId, parseContent);
      const botId = appId ?? read.optText(own(header, 'app_id'), 'header.app_id');
      // Mentions name open_ids; the bot's own (botOpenId) becomes its id here, the app id.
      const mentions = content.mentions.map((id) => (botOpenId && botId && id === botOpenId ? botId : id));
      const fields: Record<string, string> = { message_id: messageId, chat_id: chatId, message_type: messageType };
      // A merged forward's content is a fixed placeholder: its children are read with a GET of
      // the message (open.feishu.cn im-v1/message/merge_forward), which takes the tenant token.
      // With appId and appSecret, `forward_id` has the forward reader read them while the window is open.
      if (messageType === 'merge_forward') {
        fields.forwarded = 'true';
        if (token) fields.forward_id = messageId;
      }
      const root = read.optText(own(message, 'root_id'), 'event.message.root_id');
      if (root) fields.root_id = root;
      // A reply names the message it answers (`parent_id`); im.message.receive_v1 says nothing of
      // that message's author or text (open.feishu.cn im-v1/message/intro, events/receive): reading them
      // takes a GET of the message, so reply_to_sender and reply_to_bot stay unknown here.
      const parent = read.optText(own(message, 'parent_id'), 'event.message.parent_id');
      if (parent) {
        fields.parent_id = parent;
        fields.reply_to = parent;
      }
      const created = own(message, 'create_time') ?? own(header, 'create_time');
      return {
        events: [
          buildEvent({
            kind: 'message',
            detail: chatType === 'p2p' ? 'private' : 'group',
            botId,
            conversation: { type: chatType === 'p2p' ? 'private' : 'group', id: chatId },
            sender: { id: senderId },
            platformId: eventId,
            text: content.text,
            media: content.media,
            mentions,
            fields,
            timestamp: read.timestamp(
              typeof created === 'string' && /^\d+$/.test(created) ? Number(created) : created,
              'event.message.create_time',
              'ms',
              delivery.now,
            ),
            raw: body,
          }),
        ],
        reply: ACK,
      };
    },

    async resolveMedia(ref, signal) {
      if (!token)
        throw new MediaError(
          'bad_url',
          `${where}.appId and ${where}.appSecret are needed to download Feishu images and files (they get the tenant access token)`,
          false,
        );
      return resourceDownload(token, apiBaseUrl, ref.ref ?? '', signal);
    },

    ...(token && {
      async readForward(id: string, signal: AbortSignal) {
        const path = `/open-apis/im/v1/messages/${encodeURIComponent(id)}?user_id_type=open_id`;
        return feishuForwardNodes(await feishuGet(token, apiBaseUrl, path, signal), id);
      },
    }),
  };
}

/** `POST /open-apis/im/v1/messages/{message_id}/reply`; `chat_id` sends anew (`receive_id_type=chat_id`). A reply's `parent_id` is its quote. */
export function feishuReply({ ids, conversation }: ReplyTarget): ReplyParts {
  const quote = quoteOf(ids, 'parent_id');
  return {
    params: { chat_id: ids.chat_id ?? conversation.id, ...(ids.message_id ? { message_id: ids.message_id } : {}) },
    ...(ids.message_id ? { messageId: ids.message_id } : {}),
    ...(quote ? { quote } : {}),
  };
}
