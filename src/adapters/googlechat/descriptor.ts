import { z } from 'zod';
import { mediaTypeOf, type EventKind, type InboundEvent, type MediaRef } from '../../events/inbound.js';
import type { ReplyParts, ReplyTarget, ReplyValue } from '../../events/reply.js';
import { defineAdapter, type AdapterChannel } from '../kit/descriptor.js';
import { eventBuilder } from '../kit/event.js';
import { JWT_REPLAY_HORIZON_MS, remoteKeys, verifyBearer } from '../kit/jwt.js';
import { baseUrl, optionalText } from '../kit/settings.js';
import { own, PayloadReader, type Json } from '../kit/shape.js';
import { shapeError, type Adapter, type Normalized } from '../kit/types.js';

/** The service account Google Chat signs its requests to an app with (developers.google.com/workspace/chat/verify-requests-from-chat). */
export const GOOGLE_CHAT_ISSUER = 'chat@system.gserviceaccount.com';

const settings = z.strictObject({
  /**
   * What the tokens' `aud` must be: the app's project number (authentication audience "Project
   * Number", whose tokens Chat's service account signs).
   */
  audience: optionalText(),
  jwksUrl: baseUrl(`https://www.googleapis.com/service_accounts/v1/jwk/${GOOGLE_CHAT_ISSUER}`),
});

/** Google Chat apps over HTTP (the interaction events of developers.google.com/workspace/chat/api/reference/rest/v1/Event). */
export const googlechat = defineAdapter({
  name: 'googlechat',
  namespace: 'googlechat',
  secret: { setting: 'audience', required: true, why: 'checks the audience of the Bearer JWT Google Chat signs' },
  settings,
  // Google Chat documents no redelivery of an interaction event: today's exact-id window (dedup.idTtlMs).
  retryHorizonMs: 300_000,
  replayHorizonMs: (options) => (options.audience === undefined ? 0 : JWT_REPLAY_HORIZON_MS),
  create: googleChatAdapter,
});

const notices = new Set(['ADDED_TO_SPACE', 'REMOVED_FROM_SPACE']);

/**
 * Google Chat: each request carries `Authorization: Bearer <JWT>` signed by Chat's service
 * account, for the app's audience. One request is one event; a `MESSAGE` is a message (its
 * `argumentText`, the text with the app's own @mention taken out, as Chat gives it), joining and
 * leaving a space are notices, anything else (card clicks, widget updates) is acknowledged. The
 * answer is `{}`: an empty response, no synchronous reply message.
 */
export function googleChatAdapter(channel: AdapterChannel, options: z.output<typeof settings>): Adapter {
  const audience = channel.verify ? options.audience : undefined;
  const keys = audience ? remoteKeys(options.jwksUrl) : undefined;
  const namespace = channel.namespace;
  const buildEvent = eventBuilder({ channel: channel.id, adapter: 'googlechat', namespace, idPrefix: 'gchat' });
  const fail = (problem: string) => shapeError(channel, 'a Google Chat event', problem);

  return {
    name: 'googlechat',
    channel: channel.id,
    namespace,

    async verify(delivery) {
      if (!audience || !keys) return;
      await verifyBearer(channel, delivery, keys, { issuer: GOOGLE_CHAT_ISSUER, audience, platform: 'Google Chat' });
    },

    normalize(body, delivery): Normalized {
      const read = new PayloadReader(fail);
      const event = read.object(body, 'the body', '{"type":...,"space":...,"message":...}');
      const reply = { status: 200, body: {} };
      const type = read.text(own(event, 'type'), 'type');
      const kind: EventKind | undefined = type === 'MESSAGE' ? 'message' : notices.has(type) ? 'notice' : undefined;
      if (!kind) return { events: [], ignored: 1, reply };
      const space = read.object(own(event, 'space'), 'space');
      const spaceName = read.text(own(space, 'name'), 'space.name');
      const direct = own(space, 'type') === 'DM' || own(space, 'spaceType') === 'DIRECT_MESSAGE';
      const conversation = { type: direct ? ('private' as const) : ('group' as const), id: spaceName };
      const message = kind === 'message' ? read.object(own(event, 'message'), 'message') : {};
      const user =
        read.optObject(own(message, 'sender'), 'message.sender') ?? read.optObject(own(event, 'user'), 'user');
      const sender = {
        id: read.optText(own(user ?? {}, 'name'), 'message.sender.name') ?? 'unknown',
        ...nameOf(read, user),
      };
      const platformId = kind === 'message' ? read.text(own(message, 'name'), 'message.name') : undefined;
      const text =
        kind === 'message'
          ? (
              read.optText(own(message, 'argumentText'), 'message.argumentText') ??
              read.optText(own(message, 'text'), 'message.text') ??
              ''
            ).trim()
          : '';
      const thread = read.optObject(own(message, 'thread'), 'message.thread');
      const threadName = read.optText(own(thread ?? {}, 'name'), 'message.thread.name');
      const stamp =
        read.optText(own(message, 'createTime'), 'message.createTime') ??
        read.optText(own(event, 'eventTime'), 'eventTime');
      const events: InboundEvent[] = [
        buildEvent({
          kind,
          detail: kind === 'message' ? conversation.type : type,
          conversation,
          sender,
          platformId,
          text,
          media: kind === 'message' ? mediaOf(read, message) : [],
          mentions: kind === 'message' ? mentionsOf(read, message) : [],
          timestamp: secondsOf(stamp, delivery.now, fail),
          fields: {
            space: spaceName,
            ...(threadName ? { thread: threadName } : {}),
            ...(platformId ? { message_name: platformId } : {}),
          },
          raw: event,
        }),
      ];
      return { events, reply };
    },

    replyTo: googleChatReply,
  };
}

function nameOf(read: PayloadReader, user: Json | undefined): { name?: string } {
  const name = user ? read.optText(own(user, 'displayName'), 'message.sender.displayName') : undefined;
  return name ? { name } : {};
}

/** Who a message @mentions: the `users/<id>` of its `USER_MENTION` annotations (the app's own included). */
function mentionsOf(read: PayloadReader, message: Json): string[] {
  return read.optArray(own(message, 'annotations'), 'message.annotations').flatMap((value, i) => {
    const at = `message.annotations[${i}]`;
    const annotation = read.object(value, at);
    if (own(annotation, 'type') !== 'USER_MENTION') return [];
    const mention = read.optObject(own(annotation, 'userMention'), `${at}.userMention`) ?? {};
    const user = read.optObject(own(mention, 'user'), `${at}.userMention.user`) ?? {};
    const name = read.optText(own(user, 'name'), `${at}.userMention.user.name`);
    return name ? [name] : [];
  });
}

/** Attachments with a `downloadUri` go to the media stage by it; Drive files (no URI) stay a name in the text's place. */
function mediaOf(read: PayloadReader, message: Json): MediaRef[] {
  return read.optArray(own(message, 'attachment'), 'message.attachment').flatMap((value, i) => {
    const at = `message.attachment[${i}]`;
    const attachment = read.object(value, at);
    const url = read.optText(own(attachment, 'downloadUri'), `${at}.downloadUri`);
    if (!url) return [];
    const mimeType = read.optText(own(attachment, 'contentType'), `${at}.contentType`);
    const fileName = read.optText(own(attachment, 'contentName'), `${at}.contentName`);
    return [
      {
        url,
        ...(mimeType ? { mimeType, type: mediaTypeOf(mimeType) } : {}),
        ...(fileName ? { fileName } : {}),
      },
    ];
  });
}

/** An RFC 3339 time (`2017-03-02T19:02:59.910959Z`) as whole seconds; absent, the receive time. */
function secondsOf(value: string | undefined, receivedMs: number, fail: (problem: string) => Error): number {
  if (value === undefined) return Math.floor(receivedMs / 1000);
  const ms = Date.parse(value);
  if (!Number.isFinite(ms) || ms < 0 || ms >= 32_503_680_000_000)
    throw fail(`message.createTime must be an RFC 3339 time, got "${value.slice(0, 40)}"`);
  return Math.floor(ms / 1000);
}

/** `spaces.messages.create` on `parent` = the space, in the message's thread (`thread.name`). */
export function googleChatReply({ ids, conversation }: ReplyTarget): ReplyParts {
  const params: Record<string, ReplyValue> = { parent: ids.space ?? conversation.id };
  if (ids.thread) params.thread = ids.thread;
  return { params, ...(ids.message_name ? { messageId: ids.message_name } : {}) };
}
