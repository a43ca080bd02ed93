import { z } from 'zod';
import { hmac } from '../../core/signing.js';
import { defineAdapter, type AdapterChannel } from '../kit/descriptor.js';
import { eventBuilder } from '../kit/event.js';
import { contentOf, mediaOf, messageFields, segmentsOf, str } from './message.js';
import { forwardNodes } from './forward.js';
import { optionalText } from '../kit/settings.js';
import { kindOf, own, PayloadReader } from '../kit/shape.js';
import { RequestError, SignatureError } from '../../core/errors.js';
import type { RawDelivery } from '../../events/transport.js';
import { sessionKeyOf, type RevisionRef } from '../../events/inbound.js';
import type { ReplyParts, ReplyTarget, ReplyValue } from '../../events/reply.js';
import { idValue, quoteOf } from '../kit/reply.js';
import { acceptOneBotSocket, loginIdOf, oneBotFrame } from './socket.js';
import { inputStatusOf } from './typing.js';
import { checkSignature, headerOf, shapeError, verifiedSecret, type Adapter, type Normalized } from '../kit/types.js';

type Json = Record<string, unknown>;

const millis = (min: number, max: number, fallback: number) =>
  z.number({ error: 'must be a number of milliseconds' }).int().min(min).max(max).default(fallback);

const settings = z
  .strictObject({
    /**
     * `http`: HTTP POST reporting; `ws-reverse`: the bot connects to us by WebSocket at the webhook
     * URL; `ws`: we connect to the bot's forward WebSocket at `url`.
     */
    transport: z.enum(['http', 'ws-reverse', 'ws'], { error: 'must be "http", "ws-reverse" or "ws"' }).default('http'),
    /** Signs `X-Signature` (HMAC-SHA1) over HTTP. */
    secret: optionalText(),
    /** The token of the WebSocket transports (`Authorization: Bearer`, or `?access_token=`), and of `apiUrl`. */
    accessToken: optionalText(),
    /** The bot's forward WebSocket (`transport: "ws"`): `ws://` or `wss://`. */
    url: optionalText().refine((url) => url === undefined || /^wss?:\/\/[^\s/]/i.test(url), {
      error: 'must be a ws:// or wss:// URL',
    }),
    /** The bot's HTTP API (`transport: "http"`), where actions go: `http://` or `https://`. */
    apiUrl: optionalText().refine((url) => url === undefined || /^https?:\/\/[^\s/]/i.test(url), {
      error: 'must be an http:// or https:// URL',
    }),
    /** Reconnect backoff of the forward WebSocket: from this, doubling, jittered. */
    reconnectMinMs: millis(10, 600_000, 1000),
    reconnectMaxMs: millis(10, 3_600_000, 30_000),
    /** On several instances one holds the forward WebSocket; a survivor takes it over within this. */
    leaseMs: millis(300, 600_000, 15_000),
    /** How long an action (`POST /v1/channels/<id>/actions/<action>`) waits for the bot's answer. */
    actionTimeoutMs: millis(100, 600_000, 10_000),
    /** Our bots' account ids (self_id), for the bot-loop guard. */
    botIds: z
      .array(z.union([z.string(), z.number()]), { error: 'must be an array of account ids' })
      .optional()
      .transform((ids) => (ids ?? []).map(String)),
  })
  .check((ctx) => {
    const { transport, url, apiUrl, reconnectMinMs, reconnectMaxMs } = ctx.value;
    const issue = (path: string, message: string) =>
      ctx.issues.push({ code: 'custom', path: [path], message, input: ctx.value });
    if (transport === 'ws' && url === undefined)
      issue('url', 'is required with "transport": "ws" (the bot\'s forward WebSocket, e.g. "ws://127.0.0.1:3001")');
    if (transport !== 'ws' && url !== undefined)
      issue('url', 'is only for "transport": "ws" (we connect to the bot there)');
    if (transport !== 'http' && apiUrl !== undefined)
      issue('apiUrl', 'is only for "transport": "http": over a WebSocket, actions go on the socket');
    if (reconnectMaxMs < reconnectMinMs) issue('reconnectMaxMs', `must be at least reconnectMinMs (${reconnectMinMs})`);
  });

/** OneBot v11 over HTTP POST. */
export const onebot = defineAdapter({
  name: 'onebot',
  namespace: 'qq',
  secret: { setting: 'secret', required: true },
  secretFor: (values) =>
    values.transport === 'ws-reverse'
      ? { setting: 'accessToken', required: true, why: 'authenticates the bots that connect by WebSocket with it' }
      : values.transport === 'ws'
        ? { setting: 'accessToken', required: false }
        : { setting: 'secret', required: true },
  settings,
  // go-cqhttp's docs: it retries a post 3 times; no horizon given: today's exact-id window
  // (dedup.idTtlMs).
  retryHorizonMs: 300_000,
  create: onebotAdapter,
});

/**
 * OneBot v11 (NapCat, Lagrange, go-cqhttp, ...) over HTTP POST: one event per request,
 * `X-Signature: sha1=<hex>` over the raw body when a secret is set, answered 204 at once; or
 * over a reverse WebSocket: the bot authenticates once at the upgrade, then sends one event per
 * frame (see onebot-ws.ts).
 */
export function onebotAdapter(channel: AdapterChannel, options: z.output<typeof settings>): Adapter {
  const secret = verifiedSecret(channel, options.secret);
  const socket = options.transport !== 'http';
  const accessToken = verifiedSecret(channel, options.accessToken);
  const namespace = channel.namespace;
  const botIds = options.botIds;
  const buildEvent = eventBuilder({ channel: channel.id, adapter: 'onebot', namespace, idPrefix: 'ob', idLength: 12 });
  const fail = (problem: string) => shapeError(channel, 'a OneBot v11 event', problem);
  /**
   * The message a `message_sent` event reports, with the id a later reply segment quotes, and
   * the session it went to: a message our account sent there not through us is a person
   * answering (contract §13).
   */
  const sentBy = (event: Json): Pick<Normalized, 'sent'> => {
    const messageId = str(event.message_id);
    if (!messageId) return {};
    const botId = str(event.self_id);
    const content = contentOf(segmentsOf(event.message ?? event.raw_message));
    const sessionKey = sentSessionOf(event, namespace, botId);
    return {
      sent: [
        {
          namespace,
          messageId,
          ...(botId ? { botId } : {}),
          ...(content ? { content } : {}),
          ...(sessionKey ? { sessionKey } : {}),
        },
      ],
    };
  };

  return {
    name: 'onebot',
    channel: channel.id,
    namespace,
    botIds,
    // Any number of bots may POST to one URL (each names itself in X-Self-ID and `self_id`) or
    // connect to one reverse-WebSocket URL; a forward socket is one bot's (one `url`).
    severalBots: options.transport !== 'ws',

    actionTimeoutMs: options.actionTimeoutMs,
    sentByAction,
    sendsMessage: (action: string) => SEND_ACTION.test(action),
    forwardNodes,
    ...(options.transport === 'ws-reverse'
      ? {
          socketTransport: 'ws-reverse',
          acceptSocket: (handshake: RawDelivery) => acceptOneBotSocket(channel, accessToken, handshake),
          socketFrame: oneBotFrame,
        }
      : {}),
    ...(options.transport === 'ws'
      ? {
          socketTransport: 'ws',
          socketDial: {
            url: options.url as string,
            headers: options.accessToken ? { authorization: `Bearer ${options.accessToken}` } : {},
            reconnectMinMs: options.reconnectMinMs,
            reconnectMaxMs: options.reconnectMaxMs,
            leaseMs: options.leaseMs,
            whoAmI: { action: 'get_login_info', botIdOf: loginIdOf },
          },
          socketFrame: oneBotFrame,
        }
      : {}),
    ...(options.apiUrl
      ? {
          actionApi: {
            url: options.apiUrl,
            headers: options.accessToken ? { authorization: `Bearer ${options.accessToken}` } : {},
          },
        }
      : {}),

    verify(delivery) {
      // A socket's frames were authenticated with their connection; a POST to a socket channel
      // would be unsigned, so it is refused.
      if (socket) {
        if (delivery.authenticated) return;
        throw new SignatureError(
          options.transport === 'ws'
            ? `Channel "${channel.id}" reads the bot's forward WebSocket ("transport": "ws"): it takes no HTTP POST`
            : `Channel "${channel.id}" takes a reverse WebSocket ("transport": "ws-reverse"): connect with a WebSocket upgrade, not an HTTP POST`,
          { channel: channel.id, stage: 'adapter' },
        );
      }
      if (!secret) return;
      checkSignature(
        channel,
        'X-Signature',
        headerOf(delivery, 'x-signature')?.toLowerCase(),
        `sha1=${hmac('sha1', secret, delivery.body).toString('hex')}`,
      );
    },

    replyTo: oneBotReply,

    normalize(body, delivery): Normalized {
      const read = new PayloadReader(fail);
      const event = read.object(body, 'the body', 'one OneBot event object {post_type, ...}');
      checkSelfId(channel, str(event.self_id), delivery);
      const postType = read.text(own(event, 'post_type'), 'post_type');
      // meta events are heartbeats and lifecycle.
      if (postType === 'meta_event') return { events: [], ignored: 1, reply: { status: 204 } };
      // message_sent is the bot's own message: no event, but remembered, so that a reply quoting
      // it (the reply segment gives only its id) is known to answer our bot.
      if (postType === 'message_sent') return { events: [], ignored: 1, reply: { status: 204 }, ...sentBy(event) };
      const typing = inputStatusOf(event, namespace);
      if (typing) return typing;
      const botId = str(event.self_id) ?? headerOf(delivery, 'x-self-id');
      const userId = str(event.user_id);
      const groupId = str(event.group_id);
      const conversation = groupId
        ? { type: 'group' as const, id: groupId }
        : { type: 'private' as const, id: userId ?? 'unknown' };
      const timestamp = read.timestamp(own(event, 'time'), 'time', 's', delivery.now);
      // Each event's parts are one literal, not `{...base, ...}`: a spread followed by a dozen
      // more fields grows the copy a field at a time (~15 µs an event, most of normalize).
      const eventBotId = botId || undefined;

      if (postType === 'message') {
        const messageType = str(event.message_type);
        if (messageType !== 'private' && messageType !== 'group')
          throw fail(`message_type must be "private" or "group", got ${kindOf(event.message_type)}`);
        if (!userId)
          throw fail(
            event.user_id === undefined
              ? 'user_id is required (a number or string)'
              : `user_id must be a number or string, got ${kindOf(event.user_id)}`,
          );
        const sender = (typeof event.sender === 'object' && event.sender !== null ? event.sender : {}) as Json;
        const name = str(sender.card) || str(sender.nickname);
        const segments = segmentsOf(event.message ?? event.raw_message);
        const messageId = str(event.message_id);
        const inbound = buildEvent({
          conversation,
          timestamp,
          raw: event,
          botId: eventBotId,
          id: messageId,
          kind: 'message',
          detail: messageType,
          subType: str(event.sub_type) || undefined,
          sender: name ? { id: userId, name } : { id: userId },
          // Message ids are per bot: two bots see different ids for one group message.
          platformId: messageId ? `${botId ?? ''}:${messageId}` : undefined,
          segments,
          text: contentOf(segments),
          media: mediaOf(segments),
          // An `at` names an account by its QQ number, the id space of self_id (our botId);
          // `qq=all` (@all members) addresses everyone, not the bot.
          mentions: segments
            .filter((s) => s.type === 'at' && s.data.qq && s.data.qq !== 'all')
            .map((s) => s.data.qq as string),
          fields: messageFields(messageId, segments),
        });
        return { events: [inbound], reply: { status: 204 } };
      }

      if (postType === 'notice' || postType === 'request') {
        const detail = str(postType === 'notice' ? event.notice_type : event.request_type);
        const detailKey = postType === 'notice' ? 'notice_type' : 'request_type';
        if (!detail) throw fail(`${detailKey} is required (a string), got ${kindOf(event[detailKey])}`);
        const fields: Record<string, string> = {};
        for (const key of [
          'group_id',
          'user_id',
          'operator_id',
          'target_id',
          'message_id',
          'flag',
          'comment',
          'duration',
          'sender_id',
          'honor_type',
        ]) {
          const value = str(event[key]);
          if (value !== undefined) fields[key] = value;
        }
        if (typeof event.file === 'object' && event.file !== null) fields.file = JSON.stringify(event.file);
        const subType = str(event.sub_type);
        const recalled = postType === 'notice' ? recallOf(detail, fields, botId) : undefined;
        const inbound = buildEvent({
          conversation,
          timestamp,
          raw: event,
          botId: eventBotId,
          kind: postType,
          detail,
          subType: subType || undefined,
          sender: { id: userId ?? str(event.operator_id) ?? 'unknown' },
          // A request's comment is its text, not content: no segments.
          segments: [],
          text: str(event.comment) ?? '',
          fields,
          revises: recalled,
        });
        return { events: [inbound], reply: { status: 204 } };
      }
      return { events: [], ignored: 1, reply: { status: 204 } };
    },
  };
}

/**
 * The message a `group_recall` or `friend_recall` notice takes back (OneBot v11 event/notice.md:
 * `user_id` is its sender, `operator_id` who recalled it in a group). Its `message_id` is the
 * reporting bot's own, as the message's event had it, so it names that event's platform id.
 */
function recallOf(detail: string, fields: Record<string, string>, botId: string | undefined): RevisionRef | undefined {
  if ((detail !== 'group_recall' && detail !== 'friend_recall') || fields.message_id === undefined) return undefined;
  const messageId = `${botId ?? ''}:${fields.message_id}`;
  return fields.user_id === undefined
    ? { kind: 'recall', messageId }
    : { kind: 'recall', messageId, senderId: fields.user_id };
}

/**
 * The session a `message_sent` went to, as a message from there is keyed: its group, or in a
 * private chat the peer. NapCat names the peer in `target_id`, `user_id` being the bot itself
 * (NapNeko/NapCatQQ packages/napcat-onebot/api/msg.ts); a `user_id` that is not the bot is
 * taken for the peer where `target_id` is missing.
 */
function sentSessionOf(event: Json, namespace: string, botId: string | undefined): string | undefined {
  const groupId = str(event.group_id);
  if (groupId) return sessionKeyOf(namespace, { type: 'group', id: groupId });
  const userId = str(event.user_id);
  const peer = str(event.target_id) || (userId !== botId ? userId : undefined);
  return peer ? sessionKeyOf(namespace, { type: 'private', id: peer }) : undefined;
}

/**
 * A bot reports only its own account's events (OneBot v11: `X-Self-ID` on the WebSocket handshake
 * and on each HTTP POST names the bot, `self_id` in each event names the account that received
 * it). An event naming another account would be credited to that bot (its reply bot, its
 * message ids, its claims), so it is refused. A reverse socket's `X-Self-ID` is the one it was
 * authenticated with at its upgrade; a forward socket is the one bot at the channel's `url`, as
 * its login answer (or its first meta event) names it: a second account's frames on it would be
 * merged with the first's copies, uncorrelated, as one message said twice.
 */
function checkSelfId(channel: AdapterChannel, named: string | undefined, delivery: RawDelivery): void {
  const header = headerOf(delivery, 'x-self-id')?.trim();
  const sender = header || delivery.bot;
  if (!sender || named === undefined || named === sender) return;
  const from = header ? 'X-Self-ID' : "the bot the channel's forward socket is connected to";
  throw new RequestError(
    'self_id_mismatch',
    403,
    `Event on channel "${channel.id}" names bot ${named.slice(0, 40)} (self_id) but came from bot ${sender.slice(0, 40)} (${from}): a bot reports only its own account's events; nothing was recorded. ${header ? 'Check which account the bot framework connects as' : 'Give each bot a forward channel of its own in one namespace'}`,
    { channel: channel.id, stage: 'adapter' },
  );
}

/**
 * `send_msg({...params, message: [{type: 'reply', data: {id: message_id}}, ...]})`. Message ids
 * are per bot: this is the id the answering bot itself received, never another bot's.
 */
export function oneBotReply({ ids, conversation }: ReplyTarget): ReplyParts {
  const params: Record<string, ReplyValue> =
    conversation.type === 'group'
      ? { message_type: 'group', group_id: idValue(conversation.id) }
      : { message_type: 'private', user_id: idValue(conversation.id) };
  if (ids.message_id) params.message_id = idValue(ids.message_id);
  const quote = quoteOf(ids);
  return { params, ...(ids.message_id ? { messageId: ids.message_id } : {}), ...(quote ? { quote } : {}) };
}

/**
 * OneBot v11's send actions answer `{"status":"ok","data":{"message_id":…}}`: the id the sending
 * bot gives the message, which a reply segment to it quotes (github.com/botuniverse/onebot-11,
 * api/public.md).
 */
const SEND_ACTION = /^send_(?:group_|private_)?msg$/;

function sentByAction(action: string, answer: unknown): string | undefined {
  if (!SEND_ACTION.test(action) || typeof answer !== 'object' || answer === null) return undefined;
  const { status, data } = answer as { status?: unknown; data?: { message_id?: unknown } | null };
  return status === 'ok' ? str(data?.message_id) : undefined;
}
