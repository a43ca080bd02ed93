import { z } from 'zod';
import { SignatureError } from '../../core/errors.js';
import type { MediaRef } from '../../events/inbound.js';
import { standardWebhooks } from '../../core/signing.js';
import { defineAdapter, type AdapterChannel } from '../kit/descriptor.js';
import { eventBuilder } from '../kit/event.js';
import { explainGenericBody, genericMessagesOf } from './message.js';
import { optionalText } from '../kit/settings.js';
import { checkFreshness, headerOf, shapeError, type Adapter, type Freshness, type RawDelivery } from '../kit/types.js';
import type { ReplyParts, ReplyTarget } from '../../events/reply.js';

const settings = z.strictObject({
  /** Standard Webhooks secret (`whsec_...`); unsigned when absent. */
  secret: optionalText(),
});

/** The generic channel. */
export const generic = defineAdapter({
  name: 'generic',
  // No namespace: each generic channel is its own id space.
  secret: { setting: 'secret', required: false },
  settings,
  // Senders of the generic channel retry as they like: today's exact-id window (dedup.idTtlMs).
  retryHorizonMs: 300_000,
  // Standard Webhooks' timestamp passes within 5 min either way of our clock, when signed.
  replayHorizonMs: (options) => (options.secret === undefined ? 0 : 2 * FRESHNESS.toleranceMs),
  create: genericAdapter,
});

/** Standard Webhooks' tolerance, as `standardWebhooks.verify` applies it. */
const FRESHNESS: Freshness = {
  field: 'webhook-timestamp',
  unit: 's',
  toleranceMs: 300_000,
  limit: 'the 5 min Standard Webhooks allows',
};

function mediaRef(url: string, mimeType: string | undefined): MediaRef {
  return mimeType ? { url, mimeType } : { url };
}

/**
 * The generic JSON channel for CLIs, web chats and anything without a platform
 * of its own. Signed with Standard Webhooks when the channel has a `secret`.
 */
export function genericAdapter(channel: AdapterChannel, options: z.output<typeof settings>): Adapter {
  // Checked even under "verify": false, as before: a generic secret is opt-in signing.
  const secret = options.secret;
  const namespace = channel.namespace;
  const buildEvent = eventBuilder({ channel: channel.id, adapter: 'generic', namespace, idPrefix: 'gen' });
  return {
    name: 'generic',
    replyTo: genericReply,
    channel: channel.id,
    namespace,

    verify(delivery: RawDelivery): void {
      if (!secret) return;
      // A stale timestamp is told apart (`stale_timestamp`); the signature check repeats it.
      const timestamp = headerOf(delivery, 'webhook-timestamp');
      if (timestamp) checkFreshness(channel, timestamp, delivery.now, FRESHNESS);
      const problem = standardWebhooks.verify(
        secret,
        {
          id: headerOf(delivery, 'webhook-id'),
          timestamp: headerOf(delivery, 'webhook-timestamp'),
          signature: headerOf(delivery, 'webhook-signature'),
        },
        delivery.body,
        Math.floor(delivery.now / 1000),
      );
      if (problem)
        throw new SignatureError(`Signature mismatch on channel "${channel.id}": ${problem}`, {
          channel: channel.id,
          stage: 'adapter',
        });
    },

    deliveryId: (delivery) => (secret ? headerOf(delivery, 'webhook-id') : undefined),

    normalize(body: unknown, delivery: RawDelivery) {
      // Plain checks on the hot path; zod runs only to explain a refusal.
      const messages = genericMessagesOf(body);
      if (!messages) throw shapeError(channel, 'a generic message', explainGenericBody(body));
      const events = messages.map((message) => {
        const media: MediaRef[] = [];
        if (message.mediaUrl) media.push(mediaRef(message.mediaUrl, message.mimeType));
        if (message.media) for (const item of message.media) media.push(mediaRef(item.url, item.mimeType));
        const content = message.content === undefined ? '' : message.content.trim();
        const senderId = message.sender ? String(message.sender.id) : message.sessionKey;
        return buildEvent({
          kind: 'message',
          platformId: message.id === undefined ? undefined : String(message.id),
          fields: message.id === undefined ? undefined : { message_id: String(message.id) },
          conversation: message.conversation ?? { type: 'private', id: message.sessionKey },
          // A generic message's session key is used as given.
          sessionKey: message.sessionKey,
          sender: message.sender?.name ? { id: senderId, name: message.sender.name } : { id: senderId },
          text: content,
          media,
          timestamp: Math.floor(message.timestamp ?? delivery.now / 1000),
          raw: message,
        });
      });
      return { events };
    },
  };
}

/** No platform behind it: the conversation and the sender's message id, for the agent's own answer path. */
export function genericReply({ ids, conversation }: ReplyTarget): ReplyParts {
  // Plain literals, no spreads: built for every output (bench/pipeline.mjs).
  const messageId = ids.message_id;
  if (!messageId) return { params: { conversationId: conversation.id } };
  return { params: { conversationId: conversation.id, messageId }, messageId };
}
