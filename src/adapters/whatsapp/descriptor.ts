import { nanoid } from 'nanoid';
import { z } from 'zod';
import { RequestError } from '../../core/errors.js';
import { sessionKeyOf, type InboundEvent, type MediaRef, type MediaType } from '../../events/inbound.js';
import type { SentMessage } from '../../events/context.js';
import type { ReplyParts, ReplyTarget, ReplyValue } from '../../events/reply.js';
import { quoteOf } from '../kit/reply.js';
import { hmac, safeEqual } from '../../core/signing.js';
import { defineAdapter, type AdapterChannel } from '../kit/descriptor.js';
import { eventBuilder } from '../kit/event.js';
import { platformJson } from '../kit/platform-api.js';
import { baseUrl, optionalText } from '../kit/settings.js';
import { kindOf, own, PayloadReader, type Json } from '../kit/shape.js';
import {
  checkSignature,
  echoReply,
  headerOf,
  shapeError,
  verifiedSecret,
  type Adapter,
  type Normalized,
} from '../kit/types.js';

const settings = z.strictObject({
  /** Signs `X-Hub-Signature-256`. */
  appSecret: optionalText(),
  /** Answers the GET `hub.verify_token` handshake. */
  verifyToken: optionalText(),
  /** Graph API token, for media downloads. */
  accessToken: optionalText(),
  graphBaseUrl: baseUrl('https://graph.facebook.com/v21.0'),
});

/** WhatsApp Cloud API. */
export const whatsapp = defineAdapter({
  name: 'whatsapp',
  namespace: 'wa',
  secret: { setting: 'appSecret', required: true },
  settings,
  // WhatsApp Cloud API docs: a non-2xx delivery is retried with backoff for up to 7 days.
  retryHorizonMs: 7 * 24 * 3_600_000,
  create: whatsappAdapter,
});

const mediaKinds = new Map<string, MediaType>([
  ['image', 'image'],
  ['sticker', 'image'],
  ['audio', 'audio'],
  ['video', 'video'],
  ['document', 'document'],
]);

/** Readable text for message types that are not plain text. */
function render(read: PayloadReader, message: Json, type: string | undefined, at: string): string {
  switch (type) {
    case 'text':
      return (
        read.optText(own(read.optObject(own(message, 'text'), `${at}.text`) ?? {}, 'body'), `${at}.text.body`) ?? ''
      );
    case 'location': {
      const l = read.optObject(own(message, 'location'), `${at}.location`) ?? {};
      const place = [
        read.optText(own(l, 'name'), `${at}.location.name`),
        read.optText(own(l, 'address'), `${at}.location.address`),
      ]
        .filter(Boolean)
        .join(', ');
      return `Location: ${place ? `${place} ` : ''}(${read.optNumber(own(l, 'latitude'), `${at}.location.latitude`)}, ${read.optNumber(own(l, 'longitude'), `${at}.location.longitude`)})`;
    }
    case 'contacts':
      return read
        .optArray(own(message, 'contacts'), `${at}.contacts`)
        .map((item, i) => {
          const contact = read.object(item, `${at}.contacts[${i}]`);
          const name = read.optText(
            own(read.optObject(own(contact, 'name'), `${at}.contacts[${i}].name`) ?? {}, 'formatted_name'),
            `${at}.contacts[${i}].name.formatted_name`,
          );
          const phones = read
            .optArray(own(contact, 'phones'), `${at}.contacts[${i}].phones`)
            .map(
              (phone, k) =>
                ` ${read.optText(own(read.object(phone, `${at}.contacts[${i}].phones[${k}]`), 'phone'), `${at}.contacts[${i}].phones[${k}].phone`) ?? ''}`,
            );
          return `Contact: ${name ?? 'unknown'}${phones.join('')}`;
        })
        .join('\n');
    case 'interactive': {
      const interactive = read.optObject(own(message, 'interactive'), `${at}.interactive`) ?? {};
      const key = ['button_reply', 'list_reply', 'nfm_reply'].find(
        (k) => own(interactive, k) !== undefined && own(interactive, k) !== null,
      );
      const reply = key ? read.object(own(interactive, key), `${at}.interactive.${key}`) : {};
      return (
        read.optText(own(reply, 'title'), `${at}.interactive.${key}.title`) ??
        read.optText(own(reply, 'body'), `${at}.interactive.${key}.body`) ??
        ''
      );
    }
    case 'button': {
      const button = read.optObject(own(message, 'button'), `${at}.button`) ?? {};
      return (
        read.optText(own(button, 'text'), `${at}.button.text`) ??
        read.optText(own(button, 'payload'), `${at}.button.payload`) ??
        ''
      );
    }
    default: {
      if (type === undefined || !mediaKinds.has(type)) return '';
      const media = read.optObject(own(message, type), `${at}.${type}`) ?? {};
      return read.optText(own(media, 'caption'), `${at}.${type}.caption`) ?? '';
    }
  }
}

/**
 * WhatsApp Cloud API. GET handshake with `hub.verify_token`; POST signed with
 * `X-Hub-Signature-256` (HMAC-SHA256 of the app secret). One delivery can carry several
 * messages; `statuses[]` are receipts, acknowledged and counted but never messages.
 * Media comes as an id, exchanged at the Graph API for a short-lived URL.
 */
export function whatsappAdapter(channel: AdapterChannel, options: z.output<typeof settings>): Adapter {
  const appSecret = verifiedSecret(channel, options.appSecret);
  const { verifyToken, accessToken, graphBaseUrl } = options;
  const namespace = channel.namespace;
  const buildEvent = eventBuilder({ channel: channel.id, adapter: 'whatsapp', namespace, idPrefix: 'wa' });
  const fail = (problem: string) => shapeError(channel, 'a WhatsApp webhook', problem);

  /** One entry of `value.messages[]`. */
  function messageEvent(
    read: PayloadReader,
    message: Json,
    at: string,
    names: ReadonlyMap<string, string>,
    botId: string | undefined,
    now: number,
  ): InboundEvent {
    const from = read.text(own(message, 'from'), `${at}.from`);
    const id = read.text(own(message, 'id'), `${at}.id`);
    const type = read.optText(own(message, 'type'), `${at}.type`);
    const name = names.get(from);
    // The parts are spelled out in each literal below, not spread from a shared `base`: V8 adds
    // the fields that follow a spread one at a time, microseconds an event.
    const conversation = { type: 'private' as const, id: from };
    const sender = name ? { id: from, name } : { id: from };
    const timestamp = read.timestamp(own(message, 'timestamp'), `${at}.timestamp`, 's', now);
    const eventBotId = botId || undefined;
    if (type === 'reaction') {
      const reaction = read.optObject(own(message, 'reaction'), `${at}.reaction`) ?? {};
      const emoji = read.optText(own(reaction, 'emoji'), `${at}.reaction.emoji`) ?? '';
      // The emoji is the notice's text, not a segment: a reaction is no content of its own.
      return buildEvent({
        platformId: id,
        conversation,
        botId: eventBotId,
        sender,
        timestamp,
        raw: message,
        kind: 'notice',
        detail: 'reaction',
        text: emoji,
        segments: [],
        fields: {
          message_id: read.optText(own(reaction, 'message_id'), `${at}.reaction.message_id`) ?? '',
          emoji,
          user_id: from,
        },
      });
    }
    const text = render(read, message, type, at);
    const kind = type === undefined ? undefined : mediaKinds.get(type);
    const media: MediaRef[] = [];
    if (kind) {
      const where = `${at}.${type}`;
      const attachment = read.optObject(own(message, type as string), where) ?? {};
      const ref = read.optText(own(attachment, 'id'), `${where}.id`);
      const mimeType = read.optText(own(attachment, 'mime_type'), `${where}.mime_type`);
      const hash = read.optText(own(attachment, 'sha256'), `${where}.sha256`);
      const fileName = read.optText(own(attachment, 'filename'), `${where}.filename`);
      if (ref)
        media.push({
          ref,
          type: kind,
          ...(mimeType ? { mimeType: mimeType.split(';')[0] as string } : {}),
          ...(hash ? { hash } : {}),
          ...(fileName ? { fileName } : {}),
        });
    }
    const shown = text || (kind ? '' : `[unsupported WhatsApp message type "${type ?? ''}"]`);
    const context = read.optObject(own(message, 'context'), `${at}.context`);
    const quoted = context && read.optText(own(context, 'id'), `${at}.context.id`);
    const quotedFrom = context && read.optText(own(context, 'from'), `${at}.context.from`);
    // A forward says only that it is one (`context.forwarded`, or `frequently_forwarded` past
    // five hops), never whose it was (developers.facebook.com/docs/whatsapp/cloud-api/webhooks/components).
    const frequently = context !== undefined && own(context, 'frequently_forwarded') === true;
    const forwarded = frequently || (context !== undefined && own(context, 'forwarded') === true);
    const fields = {
      message_id: id,
      ...(quoted ? { reply_to: quoted } : {}),
      ...(quotedFrom ? { reply_to_sender: quotedFrom } : {}),
      ...(forwarded ? { forwarded: 'true' } : {}),
      ...(frequently ? { frequently_forwarded: 'true' } : {}),
    };
    return buildEvent({
      platformId: id,
      conversation,
      botId: eventBotId,
      sender,
      timestamp,
      raw: message,
      kind: 'message',
      detail: 'private',
      text: shown,
      media,
      fields,
    });
  }

  /**
   * One of `message_echoes[]` (webhook field `smb_message_echoes`, WhatsApp Business app
   * coexistence): a message the business sent from the WhatsApp Business app or a linked device,
   * `{from: <business>, to: <customer>, id, timestamp, type, <type>: {...}}`
   * (Meta's smb_message_echoes webhook reference). No event:
   * a message our account sent, by a person, in the session of the customer `to`, which Meta
   * gives as the number a send took (`+16505551234`), where messages name the customer by wa_id
   * (digits only).
   */
  function echoOf(read: PayloadReader, echo: Json, at: string, botId: string | undefined): SentMessage | undefined {
    const messageId = read.optText(own(echo, 'id'), `${at}.id`);
    if (!messageId) return undefined;
    const customer = (read.optText(own(echo, 'to'), `${at}.to`) ?? '').replace(/\D/g, '');
    const content = render(read, echo, read.optText(own(echo, 'type'), `${at}.type`), at);
    return {
      namespace,
      messageId,
      ...(botId ? { botId } : {}),
      ...(content ? { content } : {}),
      ...(customer ? { sessionKey: sessionKeyOf(namespace, { type: 'private', id: customer }) } : {}),
      byHuman: true,
    };
  }

  return {
    name: 'whatsapp',
    channel: channel.id,
    namespace,

    handshake(delivery) {
      const mode = delivery.query.get('hub.mode');
      const token = delivery.query.get('hub.verify_token') ?? '';
      const challenge = delivery.query.get('hub.challenge') ?? '';
      if (mode === 'subscribe' && verifyToken && safeEqual(token, verifyToken)) return echoReply(challenge);
      return {
        status: 403,
        body: {
          error: {
            code: 'bad_verify_token',
            message: `hub.verify_token does not match channels[${channel.index}].verifyToken of channel "${channel.id}"`,
          },
        },
      };
    },

    verify(delivery) {
      if (!appSecret) return;
      checkSignature(
        channel,
        'X-Hub-Signature-256',
        headerOf(delivery, 'x-hub-signature-256')?.toLowerCase(),
        `sha256=${hmac('sha256', appSecret, delivery.body).toString('hex')}`,
      );
    },

    normalize(body, delivery): Normalized {
      const read = new PayloadReader(fail);
      const payload = read.object(body, 'the body', '{"object":"whatsapp_business_account","entry":[...]}');
      if (own(payload, 'object') !== 'whatsapp_business_account')
        throw fail(`object must be "whatsapp_business_account", got ${kindOf(own(payload, 'object'))}`);
      const events: InboundEvent[] = [];
      const sent: SentMessage[] = [];
      let ignored = 0;
      read.array(own(payload, 'entry'), 'entry').forEach((entryValue, i) => {
        const entry = read.object(entryValue, `entry[${i}]`);
        read.optArray(own(entry, 'changes'), `entry[${i}].changes`).forEach((changeValue, j) => {
          const path = `entry[${i}].changes[${j}]`;
          const value = read.optObject(own(read.object(changeValue, path), 'value'), `${path}.value`) ?? {};
          const metadata = read.optObject(own(value, 'metadata'), `${path}.value.metadata`) ?? {};
          const botId = read.optText(own(metadata, 'phone_number_id'), `${path}.value.metadata.phone_number_id`);
          const names = new Map<string, string>();
          read.optArray(own(value, 'contacts'), `${path}.value.contacts`).forEach((item, k) => {
            const contact = read.object(item, `${path}.value.contacts[${k}]`);
            const waId = read.optText(own(contact, 'wa_id'), `${path}.value.contacts[${k}].wa_id`);
            const profile = read.optObject(own(contact, 'profile'), `${path}.value.contacts[${k}].profile`) ?? {};
            if (waId)
              names.set(waId, read.optText(own(profile, 'name'), `${path}.value.contacts[${k}].profile.name`) ?? '');
          });
          ignored += read.optArray(own(value, 'statuses'), `${path}.value.statuses`).length;
          read.optArray(own(value, 'message_echoes'), `${path}.value.message_echoes`).forEach((item, k) => {
            const at = `${path}.value.message_echoes[${k}]`;
            ignored++;
            const echo = echoOf(read, read.object(item, at), at, botId);
            if (echo) sent.push(echo);
          });
          read.optArray(own(value, 'messages'), `${path}.value.messages`).forEach((item, k) => {
            events.push(
              messageEvent(
                read,
                read.object(item, `${path}.value.messages[${k}]`),
                `${path}.value.messages[${k}]`,
                names,
                botId,
                delivery.now,
              ),
            );
          });
        });
      });
      return sent.length > 0 ? { events, ignored, sent } : { events, ignored };
    },

    replyTo: whatsAppReply,

    async resolveMedia(ref, signal) {
      if (!accessToken)
        throw new RequestError(
          'no_token',
          400,
          `channels[${channel.index}].accessToken is needed to download WhatsApp media`,
        );
      const auth = { authorization: `Bearer ${accessToken}` };
      const info = (await platformJson(
        `${graphBaseUrl}/${encodeURIComponent(ref.ref ?? nanoid())}`,
        auth,
        signal,
      )) as Json;
      if (typeof info?.url !== 'string') throw new RequestError('bad_media', 400, 'Graph API returned no media url');
      return {
        url: info.url,
        headers: auth,
        ...(info.mime_type ? { mimeType: String(info.mime_type) } : {}),
        ...(info.file_size ? { size: Number(info.file_size) } : {}),
      };
    },
  };
}

/**
 * `POST /<phone_number_id>/messages {messaging_product: "whatsapp", ...params, type, text}`: the
 * user's number, and the message quoted in `context`. Free-form replies are allowed for 24 h
 * after the user's last message (Meta's customer service window).
 */
export function whatsAppReply({ ids, conversation, sender }: ReplyTarget): ReplyParts {
  const params: Record<string, ReplyValue> = { to: conversation.type === 'private' ? conversation.id : sender.id };
  if (ids.message_id) params.context = { message_id: ids.message_id };
  const quote = quoteOf(ids);
  return { params, ...(ids.message_id ? { messageId: ids.message_id } : {}), ...(quote ? { quote } : {}) };
}
