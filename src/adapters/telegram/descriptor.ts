import { z } from 'zod';
import type { ReplyParts, ReplyTarget, ReplyValue } from '../../events/reply.js';
import { MediaError, SignatureError } from '../../core/errors.js';
import { defineAdapter, type AdapterChannel } from '../kit/descriptor.js';
import { eventBuilder } from '../kit/event.js';
import { platformJson } from '../kit/platform-api.js';
import { idValue, QUOTE_TEXT_MAX, quoteOf } from '../kit/reply.js';
import { forwardedIn } from './forward.js';
import { BOT_API_FILE_LIMIT, mediaOf } from './media.js';
import { telegramPoll } from './poll.js';
import { baseUrl, optionalText } from '../kit/settings.js';
import { kindOf, own, PayloadReader, type Json } from '../kit/shape.js';
import { checkSignature, headerOf, shapeError, verifiedSecret, type Adapter, type Normalized } from '../kit/types.js';

const millis = (min: number, max: number, fallback: number) =>
  z.number({ error: 'must be a number of milliseconds' }).int().min(min).max(max).default(fallback);

const settings = z
  .strictObject({
    /** `webhook`: Telegram POSTs to us (setWebhook); `poll`: we ask getUpdates, no public URL needed. */
    transport: z.enum(['webhook', 'poll'], { error: 'must be "webhook" or "poll"' }).default('webhook'),
    /** The secret_token given to setWebhook, sent back in X-Telegram-Bot-Api-Secret-Token. */
    secretToken: optionalText().refine((token) => token === undefined || /^[A-Za-z0-9_-]{1,256}$/.test(token), {
      error: 'must be 1-256 characters of A-Z, a-z, 0-9, _ and -, as setWebhook requires',
    }),
    /** Bot API token (`<bot id>:<secret>`), for file downloads; its bot id scopes update ids. */
    botToken: optionalText(),
    /** The bot's @username (getMe `username`): an `@username` mention of it counts as a mention of this bot. */
    botUsername: optionalText()
      .transform((name) => name?.replace(/^@/, ''))
      .refine((name) => name === undefined || /^[A-Za-z0-9_]{3,64}$/.test(name), {
        error: "must be the bot's username (letters, digits and _), with or without the leading @",
      }),
    apiBaseUrl: baseUrl('https://api.telegram.org'),
    /** Seconds a poll waits for an update (getUpdates `timeout`). */
    pollTimeoutS: z.number({ error: 'must be a number of seconds' }).int().min(0).max(50).default(25),
    /** On several instances one polls; a survivor takes over within this. */
    leaseMs: millis(300, 600_000, 15_000),
    /** Backoff after a failed poll: from this, doubling, jittered. */
    reconnectMinMs: millis(10, 600_000, 1000),
    reconnectMaxMs: millis(10, 3_600_000, 30_000),
  })
  .check((ctx) => {
    if (ctx.value.transport === 'poll' && ctx.value.botToken === undefined) {
      ctx.issues.push({
        code: 'custom',
        path: ['botToken'],
        message: 'is required with "transport": "poll" (getUpdates is asked with it)',
        input: ctx.value,
      });
    }
    if (ctx.value.reconnectMaxMs < ctx.value.reconnectMinMs) {
      ctx.issues.push({
        code: 'custom',
        path: ['reconnectMaxMs'],
        message: `must be at least reconnectMinMs (${ctx.value.reconnectMinMs})`,
        input: ctx.value,
      });
    }
  });

/** Telegram Bot API webhooks. */
export const telegram = defineAdapter({
  name: 'telegram',
  namespace: 'tg',
  secret: { setting: 'secretToken', required: true },
  // Polling authenticates us to Telegram with the bot token; nothing comes in to verify.
  secretFor: (values) =>
    values.transport === 'poll'
      ? { setting: 'botToken', required: true, why: 'polls getUpdates with it' }
      : { setting: 'secretToken', required: true },
  settings,
  // Telegram's Bot API docs: it retries "a reasonable amount" and gives no horizon: today's
  // exact-id window (dedup.idTtlMs).
  retryHorizonMs: 300_000,
  create: telegramAdapter,
});

function textOf(read: PayloadReader, message: Json, at: string): string {
  const text =
    read.optText(own(message, 'text'), `${at}.text`) ?? read.optText(own(message, 'caption'), `${at}.caption`);
  if (text !== undefined) return text;
  const location = read.optObject(own(message, 'location'), `${at}.location`);
  if (location)
    return `Location: (${read.optNumber(own(location, 'latitude'), `${at}.location.latitude`)}, ${read.optNumber(own(location, 'longitude'), `${at}.location.longitude`)})`;
  const contact = read.optObject(own(message, 'contact'), `${at}.contact`);
  if (contact) {
    const name = ['first_name', 'last_name']
      .map((key) => read.optText(own(contact, key), `${at}.contact.${key}`))
      .filter(Boolean)
      .join(' ');
    return `Contact: ${name} ${read.optText(own(contact, 'phone_number'), `${at}.contact.phone_number`) ?? ''}`.trim();
  }
  return '';
}

function nameOf(read: PayloadReader, user: Json, at: string): string | undefined {
  const first = read.optText(own(user, 'first_name'), `${at}.first_name`);
  const last = read.optText(own(user, 'last_name'), `${at}.last_name`);
  return (
    (first && last ? `${first} ${last}` : first || last) ||
    read.optText(own(user, 'username'), `${at}.username`) ||
    read.optText(own(user, 'title'), `${at}.title`)
  );
}

/** Whether the update carries `key`: at most one kind per update (core.telegram.org/bots/api#update); `null` counts as absent. */
function carries(update: Json, key: string): boolean {
  const value = own(update, key);
  return value !== undefined && value !== null;
}

/**
 * Who the message mentions: `@username` entities (UTF-16 offsets, as the Bot API counts) of the
 * text or, on a photo or file, of its caption (`caption_entities`), and `text_mention`s (users
 * without a username, by id). Our own bot's username becomes its bot id, so it lands in
 * `mentionedBots`; other usernames stay names.
 */
function mentionsOf(
  read: PayloadReader,
  message: Json,
  at: string,
  self: { username: string | undefined; botId: string },
): string[] {
  const ownName = self.username?.toLowerCase();
  // Plain loops: every update is read here, and most carry no entities at all.
  const mentions: string[] = [];
  for (const [field, key] of ENTITY_FIELDS) {
    const entities = own(message, key);
    if (entities === undefined || entities === null) continue;
    const text = own(message, field);
    const items = read.array(entities, `${at}.${key}`);
    for (let i = 0; i < items.length; i++) {
      const entity = read.object(items[i], `${at}.${key}[${i}]`);
      const type = own(entity, 'type');
      if (type === 'text_mention') {
        const user = read.optObject(own(entity, 'user'), `${at}.${key}[${i}].user`);
        const id = user && read.optText(own(user, 'id'), `${at}.${key}[${i}].user.id`);
        if (id) mentions.push(id);
        continue;
      }
      if (type !== 'mention' || typeof text !== 'string') continue;
      const offset = read.optNumber(own(entity, 'offset'), `${at}.${key}[${i}].offset`) ?? 0;
      const length = read.optNumber(own(entity, 'length'), `${at}.${key}[${i}].length`) ?? 0;
      const name = text.slice(offset + 1, offset + length);
      mentions.push(ownName !== undefined && name.toLowerCase() === ownName ? self.botId : name);
    }
  }
  return mentions;
}

/** Where a message's text and a photo's or file's caption keep their entities. */
const ENTITY_FIELDS = [
  ['text', 'entities'],
  ['caption', 'caption_entities'],
] as const;

/**
 * Telegram Bot API webhooks: `X-Telegram-Bot-Api-Secret-Token` must equal the secret_token
 * given to setWebhook. `update_id` (scoped by bot) is the platform id. Albums arrive as
 * updates sharing `media_group_id` and merge into one message in the debounce window.
 */
export function telegramAdapter(channel: AdapterChannel, options: z.output<typeof settings>): Adapter {
  const secretToken = verifiedSecret(channel, options.secretToken);
  const { botToken, apiBaseUrl } = options;
  const botId = botToken?.split(':')[0] ?? channel.id;
  const namespace = channel.namespace;
  const buildEvent = eventBuilder({ channel: channel.id, adapter: 'telegram', namespace, idPrefix: 'tg' });
  const fail = (problem: string) => shapeError(channel, 'a Telegram update', problem);

  const polling = options.transport === 'poll';
  return {
    name: 'telegram',
    channel: channel.id,
    namespace,
    ...(polling && botToken
      ? {
          poll: telegramPoll({
            apiBaseUrl,
            botToken,
            timeoutS: options.pollTimeoutS,
            leaseMs: options.leaseMs,
            reconnectMinMs: options.reconnectMinMs,
            reconnectMaxMs: options.reconnectMaxMs,
          }),
        }
      : {}),

    verify(delivery) {
      if (polling) {
        // Polled updates came from Telegram over our own request; a POST here is no one's.
        if (delivery.authenticated) return;
        throw new SignatureError(
          `Channel "${channel.id}" polls Telegram ("transport": "poll"): it takes no webhook POST`,
          { channel: channel.id, stage: 'adapter' },
        );
      }
      if (!secretToken) return;
      checkSignature(
        channel,
        'X-Telegram-Bot-Api-Secret-Token',
        headerOf(delivery, 'x-telegram-bot-api-secret-token'),
        secretToken,
        'is not the configured secretToken',
      );
    },

    normalize(body, delivery): Normalized {
      const read = new PayloadReader(fail);
      const update = read.object(body, 'the body', 'an Update object {update_id, ...}');
      const updateId = own(update, 'update_id');
      if (typeof updateId !== 'number' || !Number.isSafeInteger(updateId)) {
        throw fail(
          updateId === undefined
            ? 'update_id is required (a whole number)'
            : `update_id must be a whole number, got ${kindOf(updateId)}`,
        );
      }
      const callback = read.optObject(own(update, 'callback_query'), 'callback_query');
      const editedKey = carries(update, 'edited_message')
        ? 'edited_message'
        : carries(update, 'edited_channel_post')
          ? 'edited_channel_post'
          : undefined;
      const messageKey = carries(update, 'message')
        ? 'message'
        : carries(update, 'channel_post')
          ? 'channel_post'
          : editedKey;
      const at = messageKey ?? 'callback_query.message';
      const message = messageKey
        ? read.object(own(update, messageKey), messageKey)
        : callback && read.optObject(own(callback, 'message'), at);
      const chat = message && read.optObject(own(message, 'chat'), `${at}.chat`);
      if (!message || !chat) return { events: [], ignored: 1 };
      const edited = editedKey !== undefined && messageKey === editedKey;
      const chatId = read.text(own(chat, 'id'), `${at}.chat.id`);
      const conversation =
        own(chat, 'type') === 'private'
          ? { type: 'private' as const, id: chatId }
          : { type: 'group' as const, id: chatId };
      const [from, fromAt] =
        callback && own(callback, 'from') !== undefined
          ? [read.object(own(callback, 'from'), 'callback_query.from'), 'callback_query.from']
          : own(message, 'from') !== undefined
            ? [read.object(own(message, 'from'), `${at}.from`), `${at}.from`]
            : own(message, 'sender_chat') !== undefined
              ? [read.object(own(message, 'sender_chat'), `${at}.sender_chat`), `${at}.sender_chat`]
              : [chat, `${at}.chat`];
      const senderId = read.text(own(from, 'id'), `${fromAt}.id`);
      const name = nameOf(read, from, fromAt);
      let text = callback
        ? (read.optText(own(callback, 'data'), 'callback_query.data') ?? '')
        : textOf(read, message, at);
      // An edit reads as one; its text as it is now goes in `fields.edited_text`, for whatever
      // takes the place of the message it edits (contract §13).
      const editedText = edited ? text : undefined;
      if (edited) text = `(edited) ${text}`;
      const media = callback ? [] : mediaOf(read, message, at);
      const fields: Record<string, string> = {
        message_id: read.optText(own(message, 'message_id'), `${at}.message_id`) ?? '',
      };
      const mediaGroupId = read.optText(own(message, 'media_group_id'), `${at}.media_group_id`);
      if (mediaGroupId) fields.media_group_id = mediaGroupId;
      if (editedText !== undefined) fields.edited_text = editedText;
      // A topic's thread id is only sent back in a forum (Telegram refuses it elsewhere).
      const threadId =
        own(message, 'is_topic_message') === true
          ? read.optText(own(message, 'message_thread_id'), `${at}.message_thread_id`)
          : undefined;
      if (threadId) fields.message_thread_id = threadId;
      if (!callback) quotedIn(read, message, at, fields, botToken ? botId : undefined);
      if (!callback) forwardedIn(read, message, at, fields, nameOf);
      const [stamp, stampAt] =
        edited && own(message, 'edit_date') !== undefined
          ? [own(message, 'edit_date'), `${at}.edit_date`]
          : [own(message, 'date'), `${at}.date`];
      const event = buildEvent({
        id: String(updateId),
        kind: 'message',
        detail: conversation.type,
        subType: edited ? 'edited' : callback ? 'callback_query' : undefined,
        botId,
        conversation,
        sender: { id: senderId, ...(name ? { name } : {}) },
        platformId: callback
          ? `${botId}:${updateId}`
          : edited
            ? `${messageKeyOf(botId, chatId, fields.message_id!)}:edit:${String(stamp)}`
            : messageKeyOf(botId, chatId, fields.message_id!),
        ...(edited
          ? { revises: { kind: 'edit' as const, messageId: messageKeyOf(botId, chatId, fields.message_id!), senderId } }
          : {}),
        text,
        media,
        mentions: mentionsOf(read, message, at, { username: options.botUsername, botId }),
        fields,
        timestamp: read.timestamp(stamp, stampAt, 's', delivery.now),
        raw: update,
      });
      return { events: [event] };
    },

    replyTo: telegramReply,

    async resolveMedia(ref, signal) {
      if (!botToken)
        throw new MediaError(
          'bad_url',
          `channels[${channel.index}].botToken is needed to download Telegram files`,
          false,
        );
      if (ref.size !== undefined && ref.size > BOT_API_FILE_LIMIT) {
        throw new MediaError('too_large', `${ref.size} bytes: the Telegram Bot API serves files up to 20 MB`, false);
      }
      const info = (await platformJson(
        `${apiBaseUrl}/bot${botToken}/getFile?file_id=${encodeURIComponent(ref.ref ?? '')}`,
        {},
        signal,
      ).catch((error: unknown) => {
        // Never let the token-bearing URL reach a message: say what Telegram said.
        throw new MediaError(
          'http',
          `getFile failed: ${(error as Error).message.replaceAll(botToken, '<token>')}`,
          false,
        );
      })) as { result?: { file_path?: unknown; file_size?: unknown } } | undefined;
      const path = info?.result?.file_path;
      if (typeof path !== 'string') throw new MediaError('http', 'getFile returned no file_path', false);
      const size = info?.result?.file_size;
      return { url: `${apiBaseUrl}/file/bot${botToken}/${path}`, ...(typeof size === 'number' ? { size } : {}) };
    },
  };
}

/**
 * The message a Telegram message answers (`reply_to_message`), into `fields`. In a forum every
 * message of a topic replies to the topic's creation message: that is no quote.
 * `reply_to_bot` is `"true"` when `from.id` is this bot's id (the token's prefix,
 * core.telegram.org/bots/api#authorizing-your-bot), `"false"` when `from.is_bot` says a person
 * wrote it; another bot's message leaves it to the author's id.
 */
function quotedIn(
  read: PayloadReader,
  message: Json,
  at: string,
  fields: Record<string, string>,
  botId: string | undefined,
): void {
  const quoted = read.optObject(own(message, 'reply_to_message'), `${at}.reply_to_message`);
  if (!quoted || own(quoted, 'forum_topic_created') !== undefined) return;
  const id = read.optText(own(quoted, 'message_id'), `${at}.reply_to_message.message_id`);
  if (!id) return;
  fields.reply_to = id;
  const from = read.optObject(own(quoted, 'from'), `${at}.reply_to_message.from`);
  const sender = from && read.optText(own(from, 'id'), `${at}.reply_to_message.from.id`);
  if (sender) fields.reply_to_sender = sender;
  if (sender !== undefined && sender === botId) fields.reply_to_bot = 'true';
  else if (from && own(from, 'is_bot') === false) fields.reply_to_bot = 'false';
  const text =
    read.optText(own(quoted, 'text'), `${at}.reply_to_message.text`) ??
    read.optText(own(quoted, 'caption'), `${at}.reply_to_message.caption`);
  if (text) fields.reply_to_text = text.slice(0, QUOTE_TEXT_MAX);
}

/** `sendMessage({...params, text})`: chat_id, the topic in a forum, and reply_parameters.message_id. */
export function telegramReply({ ids, conversation }: ReplyTarget): ReplyParts {
  const params: Record<string, ReplyValue> = { chat_id: idValue(conversation.id) };
  if (ids.message_thread_id) params.message_thread_id = idValue(ids.message_thread_id);
  if (ids.message_id) params.reply_parameters = { message_id: idValue(ids.message_id) };
  const quote = quoteOf(ids);
  // Fields added to a plain literal, no spreads: built for every output.
  const parts: ReplyParts = { params };
  if (ids.message_id) parts.messageId = ids.message_id;
  if (quote) parts.quote = quote;
  return parts;
}

/**
 * A message's key: the bot, the chat and the message's id in it (Telegram numbers messages per
 * chat). Its retries share it, and an edit names it (contract §13); an edit's own event adds
 * when it was edited, so each edit is a new event.
 */
function messageKeyOf(botId: string, chatId: string, messageId: string): string {
  return `${botId}:${chatId}:${messageId}`;
}
