import { z } from 'zod';
import { IntakeError, SignatureError } from '../../core/errors.js';
import { safeEqual } from '../../core/signing.js';
import { sessionKeyOf } from '../../events/inbound.js';
import type { ReplyParts, ReplyTarget, ReplyValue } from '../../events/reply.js';
import { defineAdapter, type AdapterChannel } from '../kit/descriptor.js';
import { eventBuilder } from '../kit/event.js';
import { idValue, quoteOf } from '../kit/reply.js';
import { optionalText } from '../kit/settings.js';
import { kindOf, own, PayloadReader, type Json } from '../kit/shape.js';
import { headerOf, shapeError, verifiedSecret, type Adapter, type Normalized } from '../kit/types.js';
import { contentOf, mediaOf, messageFields, segmentsOf, str } from './message.js';
import { milkyFrame, noticeOf } from './event.js';
import { readMilkyForward } from './forward.js';

const millis = (min: number, max: number, fallback: number) =>
  z.number({ error: 'must be a number of milliseconds' }).int().min(min).max(max).default(fallback);

const settings = z
  .strictObject({
    /** `ws`: we dial `<url>/event`; `webhook`: the Milky server POSTs each event to `/webhooks/<id>`. */
    transport: z.enum(['ws', 'webhook'], { error: 'must be "ws" or "webhook"' }).default('ws'),
    /** The Milky server's base URL (`http://` or `https://`): events at `<url>/event`, actions at `<url>/api/<action>`. */
    url: optionalText().refine((url) => url === undefined || /^https?:\/\/[^\s/]/i.test(url), {
      error: 'must be an http:// or https:// URL (the Milky server, e.g. "http://127.0.0.1:3000")',
    }),
    /** The server's access token: `Authorization: Bearer` on our socket and API calls, and on its webhook POSTs. */
    accessToken: optionalText(),
    reconnectMinMs: millis(10, 600_000, 1000),
    reconnectMaxMs: millis(10, 3_600_000, 30_000),
    /** On several instances one holds the event socket; a survivor takes it over within this. */
    leaseMs: millis(300, 600_000, 15_000),
    /** How long an action (`POST /v1/channels/<id>/actions/<action>`) waits for the server. */
    actionTimeoutMs: millis(100, 600_000, 10_000),
    /** Our bots' QQ numbers (self_id), for the bot-loop guard. */
    botIds: z
      .array(z.union([z.string(), z.number()]), { error: 'must be an array of QQ numbers' })
      .optional()
      .transform((ids) => (ids ?? []).map(String)),
  })
  .check((ctx) => {
    const { transport, url, reconnectMinMs, reconnectMaxMs } = ctx.value;
    const issue = (path: string, message: string) =>
      ctx.issues.push({ code: 'custom', path: [path], message, input: ctx.value });
    if (transport === 'ws' && url === undefined)
      issue('url', 'is required with "transport": "ws" (the Milky server, e.g. "http://127.0.0.1:3000")');
    if (reconnectMaxMs < reconnectMinMs) issue('reconnectMaxMs', `must be at least reconnectMinMs (${reconnectMinMs})`);
  });

/** Milky (QQNT: Lagrange.Milky, LLBot): QQ numbers, the `qq` namespace OneBot bots use too. */
export const milky = defineAdapter({
  name: 'milky',
  namespace: 'qq',
  secret: {
    setting: 'accessToken',
    required: true,
    why: 'authenticates the webhook POSTs of the Milky server with it',
  },
  secretFor: (values) =>
    values.transport === 'webhook'
      ? {
          setting: 'accessToken',
          required: true,
          why: 'authenticates the webhook POSTs of the Milky server with it',
        }
      : { setting: 'accessToken', required: false },
  settings,
  // Milky documents no redelivery of a webhook POST (SaltifyDev/milky docs/guide/communication.md):
  // today's exact-id window (dedup.idTtlMs).
  retryHorizonMs: 300_000,
  create: milkyAdapter,
});

/**
 * Milky over its event WebSocket (`GET <url>/event`, one JSON text frame per event, which we dial
 * under a lease) or webhook POSTs. A message is `(message_scene, peer_id, message_seq)`, the
 * sequence counting within its conversation (Milky's FAQ), so its platform id is
 * `<self_id>:<scene>:<peer_id>:<message_seq>`, which a `message_recall` names the same way.
 */
export function milkyAdapter(channel: AdapterChannel, options: z.output<typeof settings>): Adapter {
  const accessToken = verifiedSecret(channel, options.accessToken);
  const namespace = channel.namespace;
  const buildEvent = eventBuilder({
    channel: channel.id,
    adapter: 'milky',
    namespace,
    idPrefix: 'milky',
    idLength: 12,
  });
  const fail = (problem: string) => shapeError(channel, 'a Milky event', problem);
  const base = options.url?.replace(/\/+$/, '');
  const auth: Record<string, string> = options.accessToken ? { authorization: `Bearer ${options.accessToken}` } : {};
  /**
   * The bot last heard from on this instance: a socket channel is one bot, whose actions then
   * name it without `?self_id=` or `botIds` (its sends are told from a person's on its account).
   */
  let lastSelfId: string | undefined;

  return {
    name: 'milky',
    channel: channel.id,
    namespace,
    botIds: options.botIds,
    // Webhook POSTs of several Milky servers may share a URL, each event naming its bot in self_id.
    severalBots: options.transport === 'webhook',
    actionTimeoutMs: options.actionTimeoutMs,
    sendsMessage: (action) => SEND_ACTION.test(action),
    sentByAction: (action, answer, sent) => sentByAction(action, answer, sent?.params, sent?.botId),
    ...(base
      ? {
          actionApi: { url: `${base}/api`, headers: auth, setting: 'url', bot: () => lastSelfId },
          readForward: (id: string, signal: AbortSignal) =>
            readMilkyForward({ url: `${base}/api`, headers: auth }, id, signal),
        }
      : {}),
    ...(options.transport === 'ws' && base
      ? {
          socketTransport: 'ws',
          socketDial: {
            url: `${base.replace(/^http/i, 'ws')}/event`,
            headers: auth,
            reconnectMinMs: options.reconnectMinMs,
            reconnectMaxMs: options.reconnectMaxMs,
            leaseMs: options.leaseMs,
          },
          socketFrame: milkyFrame,
        }
      : {}),

    verify(delivery) {
      if (delivery.authenticated) return;
      const context = { channel: channel.id, stage: 'adapter' };
      if (options.transport === 'ws')
        throw new SignatureError(
          `Channel "${channel.id}" reads the Milky server's event WebSocket ("transport": "ws"): it takes no HTTP POST`,
          context,
        );
      if (accessToken === undefined) return;
      const authorization = headerOf(delivery, 'authorization')?.trim();
      const bearer = authorization && /^bearer\s/i.test(authorization) ? authorization.slice(7).trim() : undefined;
      const token = bearer || delivery.query.get('access_token') || undefined;
      if (token === undefined)
        throw new IntakeError(
          'token_missing',
          401,
          `Access token missing on channel "${channel.id}": the Milky server sends Authorization: Bearer <accessToken>`,
          context,
        );
      if (!safeEqual(token, accessToken))
        throw new IntakeError(
          'token_mismatch',
          403,
          `Access token wrong on channel "${channel.id}": it does not match the channel's accessToken`,
          context,
        );
    },

    replyTo: milkyReply,

    normalize(body, delivery): Normalized {
      const read = new PayloadReader(fail);
      const event = read.object(body, 'the body', 'one Milky event {time, self_id, event_type, data}');
      const selfId = read.text(own(event, 'self_id'), 'self_id');
      const type = read.text(own(event, 'event_type'), 'event_type');
      const data = read.object(own(event, 'data'), 'data');
      const timestamp = read.timestamp(own(event, 'time'), 'time', 's', delivery.now);
      lastSelfId = selfId;
      const platformIdOf = (scene: string, peer: string, seq: string) => `${selfId}:${scene}:${peer}:${seq}`;

      if (type === 'message_receive') {
        const scene = read.text(own(data, 'message_scene'), 'data.message_scene');
        if (scene !== 'group' && scene !== 'friend' && scene !== 'temp')
          throw fail(
            `data.message_scene must be "group", "friend" or "temp", got ${kindOf(own(data, 'message_scene'))}`,
          );
        const peer = read.text(own(data, 'peer_id'), 'data.peer_id');
        const seq = read.text(own(data, 'message_seq'), 'data.message_seq');
        const senderId = read.text(own(data, 'sender_id'), 'data.sender_id');
        const raw = read.array(own(data, 'segments'), 'data.segments');
        const segments = segmentsOf(raw);
        const conversation =
          scene === 'group' ? { type: 'group' as const, id: peer } : { type: 'private' as const, id: peer };
        const platformId = platformIdOf(scene, peer, seq);
        if (senderId === selfId) {
          // The bot's own message (sent through us or by a person on its account): remembered, not a message in.
          const content = contentOf(segments);
          const sessionKey = sessionKeyOf(namespace, conversation);
          return {
            events: [],
            ignored: 1,
            reply: { status: 204 },
            sent: [{ namespace, messageId: platformId, botId: selfId, sessionKey, ...(content ? { content } : {}) }],
          };
        }
        const member = read.optObject(own(data, 'group_member'), 'data.group_member') ?? {};
        const friend = read.optObject(own(data, 'friend'), 'data.friend') ?? {};
        const name = str(own(member, 'card')) || str(own(member, 'nickname')) || str(own(friend, 'nickname'));
        const inbound = buildEvent({
          kind: 'message',
          detail: scene === 'group' ? 'group' : 'private',
          subType: scene,
          conversation,
          timestamp: read.timestamp(own(data, 'time'), 'data.time', 's', timestamp * 1000),
          raw: event,
          botId: selfId,
          id: platformId,
          sender: name ? { id: senderId, name } : { id: senderId },
          platformId,
          segments,
          text: contentOf(segments),
          media: mediaOf(segments),
          mentions: segments.filter((s) => s.type === 'at' && s.data.qq && s.data.qq !== 'all').map((s) => s.data.qq!),
          fields: messageFields(seq, (quoted) => platformIdOf(scene, peer, quoted), segments, raw),
        });
        return { events: [inbound], reply: { status: 204 } };
      }

      const notice = noticeOf(type, data, selfId, platformIdOf);
      if (!notice) return { events: [], ignored: 1, reply: { status: 204 } };
      const inbound = buildEvent({ ...notice, timestamp, raw: event, botId: selfId, segments: [] });
      return { events: [inbound], reply: { status: 204 } };
    },
  };
}

/**
 * The send APIs (`send_group_message{group_id, message}`, `send_private_message{user_id,
 * message}`) answer `{status: "ok", data: {message_seq, time}}`: the message as its own event
 * will name it (SaltifyDev/milky docs, api/message).
 */
const SEND_ACTION = /^send_(?:group|private)_message$/;

function sentByAction(
  action: string,
  answer: unknown,
  params: Record<string, unknown> | undefined,
  botId: string | undefined,
): string | undefined {
  if (!SEND_ACTION.test(action) || typeof answer !== 'object' || answer === null || !botId) return undefined;
  const { status, data } = answer as { status?: unknown; data?: Json | null };
  const seq = status === 'ok' && data ? str(own(data, 'message_seq')) : undefined;
  const group = action === 'send_group_message';
  const peer = str(params?.[group ? 'group_id' : 'user_id']);
  // A private message's scene is `friend` unless it went to a temporary chat, which the send does not say.
  return seq && peer ? `${botId}:${group ? 'group' : 'friend'}:${peer}:${seq}` : undefined;
}

/**
 * The parameters of Milky's send APIs (`group_id` or `user_id`) and the `message_seq` a reply
 * segment quotes (`{"type": "reply", "data": {"message_seq": …}}`).
 */
export function milkyReply({ ids, conversation }: ReplyTarget): ReplyParts {
  const params: Record<string, ReplyValue> =
    conversation.type === 'group' ? { group_id: idValue(conversation.id) } : { user_id: idValue(conversation.id) };
  const seq = ids.message_seq;
  if (seq) params.message_seq = idValue(seq);
  const quote = quoteOf(ids);
  return { params, ...(seq ? { messageId: seq } : {}), ...(quote ? { quote } : {}) };
}
