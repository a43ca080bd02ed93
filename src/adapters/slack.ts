import type { ChannelConfig } from '../config/schema.js';
import { SignatureError } from '../errors.js';
import { mediaTypeOf, sessionKeyOf, type InboundEvent, type MediaRef } from '../events.js';
import { MediaError } from '../media/fetch.js';
import { hmac } from '../signing.js';
import { checkSignature, headerOf, secretOf, shapeError, settingOf, type Adapter, type Normalized } from './types.js';

// Platform payloads are walked defensively: every field read is checked or coerced with String/Number.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const TOLERANCE_S = 300;
/** Message subtypes that are still a user's message; every other subtype is not. */
const userSubtypes = new Set([undefined, 'file_share', 'thread_broadcast']);

/**
 * Slack Events API: `v0` HMAC-SHA256 over `v0:<timestamp>:<body>` with the signing secret,
 * timestamps more than 5 minutes off refused. `message` and `app_mention` events of one user
 * message share `channel` and `ts`, which is the platform id, so one message never yields
 * two, and retries (`X-Slack-Retry-Num`) are duplicates of it.
 */
export function slackAdapter(channel: ChannelConfig): Adapter {
  const signingSecret = secretOf(channel, 'signingSecret');
  const botToken = settingOf(channel, 'botToken');
  const configuredBot = settingOf(channel, 'botUserId');
  const namespace = channel.namespace ?? 'slack';
  const fail = (problem: string) => shapeError(channel, 'a Slack event', problem);

  return {
    name: 'slack',
    channel: channel.id,
    namespace,
    botIds: configuredBot ? [configuredBot] : [],

    verify(delivery) {
      if (!signingSecret) return;
      const timestamp = headerOf(delivery, 'x-slack-request-timestamp');
      const signature = headerOf(delivery, 'x-slack-signature');
      if (!timestamp || !signature) throw new SignatureError(`Signature missing on channel "${channel.id}": X-Slack-Signature and X-Slack-Request-Timestamp are required`, { channel: channel.id });
      if (!/^\d{1,12}$/.test(timestamp) || Math.abs(delivery.now / 1000 - Number(timestamp)) > TOLERANCE_S) {
        throw new SignatureError(`Stale request on channel "${channel.id}": X-Slack-Request-Timestamp is more than ${TOLERANCE_S} s from now`, { channel: channel.id });
      }
      checkSignature(channel, 'X-Slack-Signature', signature, `v0=${hmac('sha256', signingSecret, `v0:${timestamp}:`, delivery.body).toString('hex')}`);
    },

    normalize(body, delivery): Normalized {
      const payload = body as Json;
      if (typeof payload !== 'object' || payload === null || typeof payload.type !== 'string') throw fail('"type" is missing');
      if (payload.type === 'url_verification') return { events: [], reply: { status: 200, body: { challenge: String(payload.challenge ?? '') } } };
      if (payload.type !== 'event_callback' || typeof payload.event !== 'object') return { events: [], ignored: 1 };
      const event = payload.event as Json;
      const ourBot = configuredBot ?? (payload.authorizations?.[0]?.user_id as string | undefined);
      const isUserMessage = (event.type === 'message' || event.type === 'app_mention') && userSubtypes.has(event.subtype)
        && !event.bot_id && typeof event.user === 'string' && event.user !== ourBot;
      if (!isUserMessage) return { events: [], ignored: 1 };
      if (!event.channel || !event.ts) throw fail('event.channel or event.ts is missing');
      const channelId = String(event.channel);
      const direct = event.channel_type === 'im' || channelId.startsWith('D');
      const conversation = direct ? { type: 'private' as const, id: channelId } : { type: 'group' as const, id: channelId };
      const raw = String(event.text ?? '');
      const mentions = [...raw.matchAll(/<@([A-Z0-9]+)(?:\|[^>]*)?>/g)].map((m) => m[1] as string);
      const text = raw.replace(/<@([A-Z0-9]+)(?:\|([^>]*))?>/g, (_m, id: string, label?: string) => `@${label ?? id}`)
        .replace(/<(https?:[^|>]+)(?:\|[^>]*)?>/g, '$1').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
      const media: MediaRef[] = ((event.files ?? []) as Json[]).filter((f) => f.url_private_download || f.url_private).map((f) => ({
        ref: String(f.url_private_download ?? f.url_private), type: mediaTypeOf(String(f.mimetype ?? '')),
        ...(f.mimetype ? { mimeType: String(f.mimetype) } : {}), ...(f.size ? { size: Number(f.size) } : {}), ...(f.name ? { fileName: String(f.name) } : {}),
      }));
      const inbound: InboundEvent = {
        id: String(payload.event_id ?? `${channelId}:${event.ts}`),
        kind: 'message',
        detail: conversation.type,
        channel: channel.id, adapter: 'slack', namespace, conversation, sessionKey: sessionKeyOf(namespace, conversation),
        ...(ourBot ? { botId: ourBot } : {}),
        sender: { id: String(event.user) },
        platformId: `${channelId}:${event.ts}`,
        segments: text ? [{ type: 'text', data: { text } }] : [],
        text, media, mentions,
        fields: { ts: String(event.ts), ...(event.thread_ts ? { thread_ts: String(event.thread_ts) } : {}), team: String(payload.team_id ?? '') },
        timestamp: Math.floor(Number(event.ts)) || Math.floor(delivery.now / 1000),
        raw: payload,
      };
      return { events: [inbound] };
    },

    async resolveMedia(ref) {
      if (!botToken) throw new MediaError('bad_url', `channels[${channel.index}].botToken is needed to download Slack files`, false);
      return { url: ref.ref ?? '', headers: { authorization: `Bearer ${botToken}` } };
    },
  };
}
