import type { ChannelConfig } from '../config/schema.js';
import { ConfigError } from '../errors.js';
import { sessionKeyOf, type InboundEvent, type MediaRef, type MediaType } from '../events.js';
import { MediaError } from '../media/fetch.js';
import { platformJson } from './platform-api.js';
import { baseUrlOf, checkSignature, headerOf, secretOf, shapeError, settingOf, type Adapter, type Normalized } from './types.js';

// Platform payloads are walked defensively: every field read is checked or coerced with String/Number.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

/** The Bot API serves files up to 20 MB (core.telegram.org/bots/api#getfile). */
const BOT_API_FILE_LIMIT = 20 * 1024 * 1024;

const fileKinds: Array<[string, MediaType]> = [
  ['document', 'document'], ['audio', 'audio'], ['voice', 'audio'], ['video', 'video'], ['video_note', 'video'], ['animation', 'video'], ['sticker', 'image'],
];

function mediaOf(message: Json): MediaRef[] {
  const media: MediaRef[] = [];
  if (Array.isArray(message.photo) && message.photo.length > 0) {
    // Photos come in several sizes; take the largest.
    const largest = (message.photo as Json[]).reduce((a, b) => ((b.file_size ?? b.width * b.height) > (a.file_size ?? a.width * a.height) ? b : a));
    media.push({ ref: String(largest.file_id), type: 'image', ...(largest.file_size ? { size: Number(largest.file_size) } : {}), ...(largest.file_unique_id ? { hash: String(largest.file_unique_id) } : {}) });
  }
  for (const [field, type] of fileKinds) {
    const file = message[field];
    if (!file?.file_id) continue;
    media.push({
      ref: String(file.file_id), type, ...(file.mime_type ? { mimeType: String(file.mime_type) } : {}), ...(file.file_size ? { size: Number(file.file_size) } : {}),
      ...(file.file_unique_id ? { hash: String(file.file_unique_id) } : {}), ...(file.file_name ? { fileName: String(file.file_name) } : {}),
    });
  }
  return media;
}

function textOf(message: Json): string {
  if (typeof message.text === 'string') return message.text;
  if (typeof message.caption === 'string') return message.caption;
  if (message.location) return `Location: (${message.location.latitude}, ${message.location.longitude})`;
  if (message.contact) return `Contact: ${[message.contact.first_name, message.contact.last_name].filter(Boolean).join(' ')} ${message.contact.phone_number ?? ''}`.trim();
  return '';
}

function nameOf(user: Json | undefined): string | undefined {
  if (!user) return undefined;
  return [user.first_name, user.last_name].filter(Boolean).join(' ') || user.username || user.title;
}

/**
 * Telegram Bot API webhooks: `X-Telegram-Bot-Api-Secret-Token` must equal the secret_token
 * given to setWebhook. `update_id` (scoped by bot) is the platform id. Albums arrive as
 * updates sharing `media_group_id` and merge into one message in the debounce window.
 */
export function telegramAdapter(channel: ChannelConfig): Adapter {
  const secretToken = secretOf(channel, 'secretToken');
  if (secretToken !== undefined && !/^[A-Za-z0-9_-]{1,256}$/.test(secretToken)) {
    throw new ConfigError(`channels[${channel.index}].secretToken (channel "${channel.id}") must be 1-256 characters of A-Z, a-z, 0-9, _ and -, as setWebhook requires`, { channel: channel.id });
  }
  const botToken = settingOf(channel, 'botToken');
  const apiBaseUrl = baseUrlOf(channel, 'apiBaseUrl', 'https://api.telegram.org');
  const botId = botToken?.split(':')[0] ?? channel.id;
  const namespace = channel.namespace ?? 'tg';
  const fail = (problem: string) => shapeError(channel, 'a Telegram update', problem);

  return {
    name: 'telegram',
    channel: channel.id,
    namespace,

    verify(delivery) {
      if (!secretToken) return;
      checkSignature(channel, 'X-Telegram-Bot-Api-Secret-Token', headerOf(delivery, 'x-telegram-bot-api-secret-token'), secretToken, 'is not the configured secretToken');
    },

    normalize(body, delivery): Normalized {
      const update = body as Json;
      if (typeof update !== 'object' || update === null || typeof update.update_id !== 'number') throw fail('update_id is missing');
      const callback = update.callback_query as Json | undefined;
      const edited = update.edited_message ?? update.edited_channel_post;
      const message = (update.message ?? update.channel_post ?? edited ?? callback?.message) as Json | undefined;
      if (!message?.chat) return { events: [], ignored: 1 };
      const chat = message.chat as Json;
      const conversation = chat.type === 'private' ? { type: 'private' as const, id: String(chat.id) } : { type: 'group' as const, id: String(chat.id) };
      const from = (callback?.from ?? message.from ?? message.sender_chat ?? chat) as Json;
      const name = nameOf(from);
      let text = callback ? String(callback.data ?? '') : textOf(message);
      if (edited) text = `(edited) ${text}`;
      const media = callback ? [] : mediaOf(message);
      const fields: Record<string, string> = { message_id: String(message.message_id ?? '') };
      if (message.media_group_id) fields.media_group_id = String(message.media_group_id);
      const mentions = ((message.entities ?? []) as Json[])
        .filter((e) => e.type === 'mention' && typeof message.text === 'string')
        .map((e) => (message.text as string).slice(e.offset + 1, e.offset + e.length));
      const event: InboundEvent = {
        id: String(update.update_id),
        kind: 'message',
        detail: conversation.type,
        ...(edited ? { subType: 'edited' } : callback ? { subType: 'callback_query' } : {}),
        channel: channel.id, adapter: 'telegram', namespace, botId, conversation, sessionKey: sessionKeyOf(namespace, conversation),
        sender: { id: String(from.id), ...(name ? { name } : {}) },
        platformId: `${botId}:${update.update_id}`,
        segments: text ? [{ type: 'text', data: { text } }] : [],
        text, media, mentions, fields,
        timestamp: Number(edited?.edit_date ?? message.date) || Math.floor(delivery.now / 1000),
        raw: update,
      };
      return { events: [event] };
    },

    async resolveMedia(ref, signal) {
      if (!botToken) throw new MediaError('bad_url', `channels[${channel.index}].botToken is needed to download Telegram files`, false);
      if (ref.size !== undefined && ref.size > BOT_API_FILE_LIMIT) {
        throw new MediaError('too_large', `${ref.size} bytes: the Telegram Bot API serves files up to 20 MB`, false);
      }
      const info = (await platformJson(`${apiBaseUrl}/bot${botToken}/getFile?file_id=${encodeURIComponent(ref.ref ?? '')}`, {}, signal).catch((error: unknown) => {
        // Never let the token-bearing URL reach a message: say what Telegram said.
        throw new MediaError('http', `getFile failed: ${(error as Error).message.replaceAll(botToken, '<token>')}`, false);
      })) as Json;
      const path = info?.result?.file_path;
      if (typeof path !== 'string') throw new MediaError('http', 'getFile returned no file_path', false);
      return { url: `${apiBaseUrl}/file/bot${botToken}/${path}`, ...(info.result.file_size ? { size: Number(info.result.file_size) } : {}) };
    },
  };
}
