import { z } from 'zod';
import type { ChannelConfig } from '../config/schema.js';
import { RequestError, SignatureError } from '../errors.js';
import type { InboundEvent, MediaRef } from '../events.js';
import { standardWebhooks } from '../signing.js';
import { nanoid } from 'nanoid';
import { headerOf, settingOf, type Adapter, type RawDelivery } from './types.js';

const mediaSchema = z.object({ url: z.string().min(1).max(4096), mimeType: z.string().max(255).optional() });

/** CONTRACT §5: one raw message. */
const messageSchema = z.object({
  id: z.union([z.string().min(1).max(256), z.number().int()]).optional(),
  sessionKey: z.string().min(1).max(512),
  sender: z.object({ id: z.union([z.string().min(1).max(256), z.number().int()]), name: z.string().max(256).optional() }).optional(),
  content: z.string().max(65_536).optional(),
  mediaUrl: z.string().min(1).max(4096).optional(),
  mimeType: z.string().max(255).optional(),
  media: z.array(mediaSchema).max(32).optional(),
  timestamp: z.number().nonnegative().optional(),
  conversation: z.object({ type: z.enum(['private', 'group']), id: z.string().min(1).max(256) }).optional(),
}).refine((m) => m.content !== undefined && m.content.trim() !== '' || m.mediaUrl !== undefined || (m.media?.length ?? 0) > 0, {
  message: 'one of content or mediaUrl (or media) is required',
});

const bodySchema = z.union([messageSchema, z.array(messageSchema).min(1).max(100)]);

function mediaRef(url: string, mimeType: string | undefined): MediaRef {
  return mimeType ? { url, mimeType } : { url };
}

/**
 * The generic JSON channel (CONTRACT §5) for CLIs, web chats and anything without a platform
 * of its own. Signed with Standard Webhooks when the channel has a `secret`.
 */
export function genericAdapter(channel: ChannelConfig): Adapter {
  const secret = settingOf(channel, 'secret');
  const namespace = channel.namespace ?? channel.id;
  return {
    name: 'generic',
    channel: channel.id,
    namespace,

    verify(delivery: RawDelivery): void {
      if (!secret) return;
      const problem = standardWebhooks.verify(secret, {
        id: headerOf(delivery, 'webhook-id'), timestamp: headerOf(delivery, 'webhook-timestamp'), signature: headerOf(delivery, 'webhook-signature'),
      }, delivery.body, Math.floor(delivery.now / 1000));
      if (problem) throw new SignatureError(`Signature mismatch on channel "${channel.id}": ${problem}`, { channel: channel.id, stage: 'adapter' });
    },

    deliveryId: (delivery) => (secret ? headerOf(delivery, 'webhook-id') : undefined),

    normalize(body: unknown, delivery: RawDelivery) {
      const parsed = bodySchema.safeParse(body);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const where = issue?.path.length ? `at ${issue.path.join('.')}` : 'at the top level';
        throw new RequestError('bad_shape', 400, `Body of channel "${channel.id}" is not a generic message ${where}: ${issue?.message ?? 'invalid'}`, { channel: channel.id, stage: 'adapter' });
      }
      const messages = Array.isArray(parsed.data) ? parsed.data : [parsed.data];
      const events = messages.map((message): InboundEvent => {
        const media: MediaRef[] = [];
        if (message.mediaUrl) media.push(mediaRef(message.mediaUrl, message.mimeType));
        if (message.media) for (const item of message.media) media.push(mediaRef(item.url, item.mimeType));
        const platformId = message.id === undefined ? undefined : String(message.id);
        const content = message.content === undefined ? '' : message.content.trim();
        const sender: InboundEvent['sender'] = { id: message.sender ? String(message.sender.id) : message.sessionKey };
        if (message.sender?.name) sender.name = message.sender.name;
        const event: InboundEvent = {
          id: platformId ?? `gen_${nanoid()}`,
          kind: 'message',
          channel: channel.id,
          adapter: 'generic',
          namespace,
          conversation: message.conversation ?? { type: 'private', id: message.sessionKey },
          sessionKey: message.sessionKey,
          sender,
          segments: content ? [{ type: 'text', data: { text: content } }] : [],
          text: content,
          media,
          mentions: [],
          timestamp: message.timestamp ?? Math.floor(delivery.now / 1000),
          raw: message,
        };
        if (platformId !== undefined) event.platformId = platformId;
        return event;
      });
      return { events };
    },
  };
}
