import type { ChannelConfig } from '../config/schema.js';
import { SignatureError } from '../errors.js';
import type { InboundEvent, MediaRef } from '../events.js';
import { standardWebhooks } from '../signing.js';
import { nanoid } from 'nanoid';
import { explainGenericBody, genericMessagesOf } from './generic-message.js';
import { headerOf, settingOf, shapeError, type Adapter, type RawDelivery } from './types.js';

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
      // Plain checks on the hot path; zod runs only to explain a refusal.
      const messages = genericMessagesOf(body);
      if (!messages) throw shapeError(channel, 'a generic message', explainGenericBody(body));
      const events = messages.map((message): InboundEvent => {
        const media: MediaRef[] = [];
        if (message.mediaUrl) media.push(mediaRef(message.mediaUrl, message.mimeType));
        if (message.media) for (const item of message.media) media.push(mediaRef(item.url, item.mimeType));
        const platformId = message.id === undefined ? undefined : String(message.id);
        const content = message.content === undefined ? '' : message.content.trim();
        // Whole literals: a field added afterwards lands in an out-of-object property array, 40
        // more bytes that the trail and the debounce buffer keep alive.
        const senderId = message.sender ? String(message.sender.id) : message.sessionKey;
        const sender: InboundEvent['sender'] = message.sender?.name ? { id: senderId, name: message.sender.name } : { id: senderId };
        const event: InboundEvent = {
          id: platformId ?? `gen_${nanoid()}`,
          platformId,
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
          timestamp: Math.floor(message.timestamp ?? delivery.now / 1000),
          raw: message,
        };
        return event;
      });
      return { events };
    },
  };
}
