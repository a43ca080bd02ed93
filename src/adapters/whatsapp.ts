import { nanoid } from 'nanoid';
import type { ChannelConfig } from '../config/schema.js';
import { RequestError } from '../errors.js';
import { sessionKeyOf, type InboundEvent, type MediaRef, type MediaType } from '../events.js';
import { hmac, safeEqual } from '../signing.js';
import { platformJson } from './platform-api.js';
import { baseUrlOf, checkSignature, headerOf, secretOf, shapeError, settingOf, type Adapter, type Normalized } from './types.js';

// Platform payloads are walked defensively: every field read is checked or coerced with String/Number.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const mediaKinds: Record<string, MediaType> = { image: 'image', sticker: 'image', audio: 'audio', video: 'video', document: 'document' };

/** Readable text for message types that are not plain text. */
function render(message: Json): string {
  switch (message.type) {
    case 'text': return String(message.text?.body ?? '');
    case 'location': {
      const l = message.location ?? {};
      const place = [l.name, l.address].filter(Boolean).join(', ');
      return `Location: ${place ? `${place} ` : ''}(${l.latitude}, ${l.longitude})`;
    }
    case 'contacts':
      return (message.contacts ?? []).map((c: Json) => `Contact: ${c.name?.formatted_name ?? 'unknown'}${(c.phones ?? []).map((p: Json) => ` ${p.phone}`).join('')}`).join('\n');
    case 'interactive': {
      const reply = message.interactive?.button_reply ?? message.interactive?.list_reply ?? message.interactive?.nfm_reply;
      return String(reply?.title ?? reply?.body ?? '');
    }
    case 'button': return String(message.button?.text ?? message.button?.payload ?? '');
    default: {
      const media = message[message.type];
      return typeof media?.caption === 'string' ? media.caption : '';
    }
  }
}

/**
 * WhatsApp Cloud API. GET handshake with `hub.verify_token`; POST signed with
 * `X-Hub-Signature-256` (HMAC-SHA256 of the app secret). One delivery can carry several
 * messages; `statuses[]` are receipts, acknowledged and counted but never messages.
 * Media comes as an id, exchanged at the Graph API for a short-lived URL.
 */
export function whatsappAdapter(channel: ChannelConfig): Adapter {
  const appSecret = secretOf(channel, 'appSecret');
  const verifyToken = settingOf(channel, 'verifyToken');
  const accessToken = settingOf(channel, 'accessToken');
  const graphBaseUrl = baseUrlOf(channel, 'graphBaseUrl', 'https://graph.facebook.com/v21.0');
  const namespace = channel.namespace ?? 'wa';
  const fail = (problem: string) => shapeError(channel, 'a WhatsApp webhook', problem);

  return {
    name: 'whatsapp',
    channel: channel.id,
    namespace,

    handshake(delivery) {
      const mode = delivery.query.get('hub.mode');
      const token = delivery.query.get('hub.verify_token') ?? '';
      const challenge = delivery.query.get('hub.challenge') ?? '';
      if (mode === 'subscribe' && verifyToken && safeEqual(token, verifyToken)) return { status: 200, body: challenge, contentType: 'text/plain' };
      return { status: 403, body: { error: { code: 'bad_verify_token', message: `hub.verify_token does not match channels[${channel.index}].verifyToken of channel "${channel.id}"` } } };
    },

    verify(delivery) {
      if (!appSecret) return;
      checkSignature(channel, 'X-Hub-Signature-256', headerOf(delivery, 'x-hub-signature-256')?.toLowerCase(), `sha256=${hmac('sha256', appSecret, delivery.body).toString('hex')}`);
    },

    normalize(body, delivery): Normalized {
      const payload = body as Json;
      if (typeof payload !== 'object' || payload === null || payload.object !== 'whatsapp_business_account' || !Array.isArray(payload.entry)) {
        throw fail('expected {"object":"whatsapp_business_account","entry":[...]}');
      }
      const events: InboundEvent[] = [];
      let ignored = 0;
      for (const entry of payload.entry as Json[]) {
        for (const change of (entry?.changes ?? []) as Json[]) {
          const value = (change?.value ?? {}) as Json;
          const botId = value.metadata?.phone_number_id === undefined ? undefined : String(value.metadata.phone_number_id);
          const names = new Map<string, string>();
          for (const contact of (value.contacts ?? []) as Json[]) if (contact?.wa_id) names.set(String(contact.wa_id), String(contact.profile?.name ?? ''));
          ignored += Array.isArray(value.statuses) ? value.statuses.length : 0;
          for (const message of (value.messages ?? []) as Json[]) {
            if (!message?.from || !message?.id) throw fail('a message lacks "from" or "id"');
            const from = String(message.from);
            const conversation = { type: 'private' as const, id: from };
            const name = names.get(from);
            const base = {
              channel: channel.id, adapter: 'whatsapp', namespace, conversation, sessionKey: sessionKeyOf(namespace, conversation),
              sender: { id: from, ...(name ? { name } : {}) }, timestamp: Number(message.timestamp) || Math.floor(delivery.now / 1000),
              segments: [], mentions: [], raw: message, ...(botId ? { botId } : {}),
            };
            if (message.type === 'reaction') {
              events.push({
                ...base, id: String(message.id), kind: 'notice', detail: 'reaction', platformId: String(message.id), text: String(message.reaction?.emoji ?? ''), media: [],
                fields: { message_id: String(message.reaction?.message_id ?? ''), emoji: String(message.reaction?.emoji ?? ''), user_id: from },
              });
              continue;
            }
            const text = render(message);
            const kind = mediaKinds[message.type as string];
            const media: MediaRef[] = [];
            const attachment = kind ? message[message.type] : undefined;
            if (kind && attachment?.id) {
              media.push({ ref: String(attachment.id), type: kind, ...(attachment.mime_type ? { mimeType: String(attachment.mime_type).split(';')[0] } : {}), ...(attachment.sha256 ? { hash: String(attachment.sha256) } : {}), ...(attachment.filename ? { fileName: String(attachment.filename) } : {}) });
            }
            const unsupported = !kind && !text ? `[unsupported WhatsApp message type "${message.type}"]` : '';
            events.push({
              ...base, id: String(message.id), kind: 'message', detail: 'private', platformId: String(message.id),
              text: text || unsupported, media, ...(text || unsupported ? { segments: [{ type: 'text', data: { text: text || unsupported } }] } : {}),
            });
          }
        }
      }
      return { events, ignored };
    },

    async resolveMedia(ref, signal) {
      if (!accessToken) throw new RequestError('no_token', 400, `channels[${channel.index}].accessToken is needed to download WhatsApp media`);
      const auth = { authorization: `Bearer ${accessToken}` };
      const info = (await platformJson(`${graphBaseUrl}/${encodeURIComponent(ref.ref ?? nanoid())}`, auth, signal)) as Json;
      if (typeof info?.url !== 'string') throw new RequestError('bad_media', 400, 'Graph API returned no media url');
      return { url: info.url, headers: auth, ...(info.mime_type ? { mimeType: String(info.mime_type) } : {}), ...(info.file_size ? { size: Number(info.file_size) } : {}) };
    },
  };
}
