import { z } from 'zod';
import { SignatureError } from '../../core/errors.js';
import { mediaTypeOf, type InboundEvent, type MediaRef } from '../../events/inbound.js';
import type { ReplyParts, ReplyTarget } from '../../events/reply.js';
import { MediaError } from '../../core/errors.js';
import { hmac } from '../../core/signing.js';
import { defineAdapter, type AdapterChannel } from '../kit/descriptor.js';
import { eventBuilder } from '../kit/event.js';
import { baseUrl, optionalText } from '../kit/settings.js';
import { slackSocket } from './socket.js';
import { slackText } from './text.js';
import { slackRevision } from './revision.js';
import { quoteOf } from '../kit/reply.js';
import { kindOf, own, PayloadReader, type Json } from '../kit/shape.js';
import {
  checkFreshness,
  checkSignature,
  echoReply,
  headerOf,
  shapeError,
  verifiedSecret,
  type Adapter,
  type Normalized,
} from '../kit/types.js';

const millis = (min: number, max: number, fallback: number) =>
  z.number({ error: 'must be a number of milliseconds' }).int().min(min).max(max).default(fallback);

const settings = z
  .strictObject({
    /** `webhook`: the Events API POSTs to us; `socket`: Socket Mode, we connect to Slack (no public URL). */
    transport: z.enum(['webhook', 'socket'], { error: 'must be "webhook" or "socket"' }).default('webhook'),
    /** Signs `X-Slack-Signature` (v0). */
    signingSecret: optionalText(),
    /** The app-level token (`xapp-`, scope connections:write) that opens Socket Mode connections. */
    appToken: optionalText(),
    apiBaseUrl: baseUrl('https://slack.com/api'),
    /** On several instances one holds the Socket Mode connection; a survivor takes over within this. */
    leaseMs: millis(300, 600_000, 15_000),
    reconnectMinMs: millis(10, 600_000, 1000),
    reconnectMaxMs: millis(10, 3_600_000, 30_000),
    /** `xoxb-` token, for file downloads. */
    botToken: optionalText(),
    /** Our bot's user id; else taken from each payload's `authorizations[0].user_id`. */
    botUserId: optionalText(),
  })
  .check((ctx) => {
    if (ctx.value.reconnectMaxMs < ctx.value.reconnectMinMs) {
      ctx.issues.push({
        code: 'custom',
        path: ['reconnectMaxMs'],
        message: `must be at least reconnectMinMs (${ctx.value.reconnectMinMs})`,
        input: ctx.value,
      });
    }
  });

/** Slack Events API. */
export const slack = defineAdapter({
  name: 'slack',
  namespace: 'slack',
  secret: { setting: 'signingSecret', required: true },
  // Socket Mode authenticates us to Slack with the app token; nothing comes in to verify.
  secretFor: (values) =>
    values.transport === 'socket'
      ? { setting: 'appToken', required: true, why: 'opens the Socket Mode connection with it' }
      : { setting: 'signingSecret', required: true },
  settings,
  // Slack's Events API docs: it retries immediately, after 1 min and after 5 min, so the
  // last lands about 5 min after the first delivery (6 when each wait follows the last): 10 min,
  // the window the Chat SDK moved to for this reason.
  retryHorizonMs: 600_000,
  create: slackAdapter,
});

const TOLERANCE_S = 300;
/** Message subtypes that are still a user's message; every other subtype is not. */
const userSubtypes = new Set([undefined, 'file_share', 'thread_broadcast']);

/**
 * Slack Events API: `v0` HMAC-SHA256 over `v0:<timestamp>:<body>` with the signing secret,
 * timestamps more than 5 minutes off refused. `message` and `app_mention` events of one user
 * message share `channel` and `ts`, which is the platform id, so one message never yields
 * two, and retries (`X-Slack-Retry-Num`) are duplicates of it.
 */
export function slackAdapter(channel: AdapterChannel, options: z.output<typeof settings>): Adapter {
  const signingSecret = verifiedSecret(channel, options.signingSecret);
  const { botToken, botUserId: configuredBot } = options;
  const namespace = channel.namespace;
  const buildEvent = eventBuilder({ channel: channel.id, adapter: 'slack', namespace, idPrefix: 'slack' });
  const fail = (problem: string) => shapeError(channel, 'a Slack event', problem);
  const socket =
    options.transport === 'socket' && options.appToken
      ? slackSocket({
          appToken: options.appToken,
          apiBaseUrl: options.apiBaseUrl,
          leaseMs: options.leaseMs,
          reconnectMinMs: options.reconnectMinMs,
          reconnectMaxMs: options.reconnectMaxMs,
        })
      : undefined;

  /**
   * The event of a user's message `message` (at `at` in the payload: `event`, or an edit's
   * `event.message`). An edit takes its own id and time (the `message_changed` event's `ts`),
   * keeps the message's `ts` in `fields` (a reply threads under the message), and no
   * `client_msg_id`: the message's own, which it repeats, would make it a duplicate of it.
   */
  function userMessage(
    read: PayloadReader,
    payload: Json,
    message: Json,
    at: string,
    user: string,
    ourBot: string | undefined,
    where: { channelId: string; conversation: Conversation; now: number; edit?: { ts: string; messageId: string } },
  ): InboundEvent {
    const { channelId, conversation, edit } = where;
    const ts = read.text(own(message, 'ts'), `${at}.ts`);
    const raw = read.optText(own(message, 'text'), `${at}.text`) ?? '';
    const { text, mentions } = slackText(raw);
    const media: MediaRef[] = read.optArray(own(message, 'files'), `${at}.files`).flatMap((item, i) => {
      const path = `${at}.files[${i}]`;
      const file = read.object(item, path, 'a file object {url_private, mimetype, ...}');
      const url =
        read.optText(own(file, 'url_private_download'), `${path}.url_private_download`) ||
        read.optText(own(file, 'url_private'), `${path}.url_private`);
      if (!url) return [];
      const mimeType = read.optText(own(file, 'mimetype'), `${path}.mimetype`);
      const size = read.optNumber(own(file, 'size'), `${path}.size`);
      const fileName = read.optText(own(file, 'name'), `${path}.name`);
      return [
        {
          ref: url,
          type: mediaTypeOf(mimeType ?? ''),
          ...(mimeType ? { mimeType } : {}),
          ...(size ? { size } : {}),
          ...(fileName ? { fileName } : {}),
        },
      ];
    });
    const threadTs = read.optText(own(message, 'thread_ts'), `${at}.thread_ts`);
    const fields: Record<string, string> = {
      ts,
      ...(threadTs ? { thread_ts: threadTs } : {}),
      team: read.optText(own(payload, 'team_id'), 'team_id') ?? '',
    };
    if (threadTs && threadTs !== ts) threadParentIn(read, message, at, threadTs, ourBot, fields);
    if (edit) fields.edited_text = text;
    const platformId = `${channelId}:${edit ? edit.ts : ts}`;
    return buildEvent({
      id: read.optText(own(payload, 'event_id'), 'event_id') || platformId,
      kind: 'message',
      detail: conversation.type,
      // An edit reads as one, as Telegram's do, until its message is found (contract §13).
      subType: edit ? 'edited' : undefined,
      botId: ourBot || undefined,
      conversation,
      sender: { id: user },
      platformId,
      // Slack can deliver one message as two events with two `ts`, tens of seconds apart; both
      // carry the client_msg_id the sender's client gave it (absent on some messages).
      clientMessageId: edit
        ? undefined
        : read.optText(own(message, 'client_msg_id'), `${at}.client_msg_id`) || undefined,
      text: edit ? `(edited) ${text}` : text,
      media,
      mentions,
      fields,
      // ts is "<seconds>.<sequence>": the message's time, and (with the channel) its id.
      timestamp: read.timestamp(edit ? edit.ts : ts, edit ? 'event.ts' : `${at}.ts`, 's', where.now),
      revises: edit ? { kind: 'edit', messageId: edit.messageId, senderId: user } : undefined,
      raw: payload,
    });
  }

  return {
    name: 'slack',
    channel: channel.id,
    namespace,
    botIds: configuredBot ? [configuredBot] : [],
    ...(socket ? { socketTransport: 'socket', socketDial: socket.dial, socketFrame: socket.frame } : {}),

    verify(delivery) {
      if (options.transport === 'socket') {
        // Envelopes came over the socket we opened with the app token; a POST here is no one's.
        if (delivery.authenticated) return;
        throw new SignatureError(
          `Channel "${channel.id}" uses Socket Mode ("transport": "socket"): it takes no Events API POST`,
          { channel: channel.id, stage: 'adapter' },
        );
      }
      if (!signingSecret) return;
      const timestamp = headerOf(delivery, 'x-slack-request-timestamp');
      const signature = headerOf(delivery, 'x-slack-signature');
      if (!timestamp || !signature)
        throw new SignatureError(
          `Signature missing on channel "${channel.id}": X-Slack-Signature and X-Slack-Request-Timestamp are required`,
          { channel: channel.id },
        );
      checkFreshness(channel, timestamp, delivery.now, {
        field: 'X-Slack-Request-Timestamp',
        unit: 's',
        toleranceMs: TOLERANCE_S * 1000,
        limit: 'the 5 min Slack allows',
      });
      checkSignature(
        channel,
        'X-Slack-Signature',
        signature,
        `v0=${hmac('sha256', signingSecret, `v0:${timestamp}:`, delivery.body).toString('hex')}`,
      );
    },

    normalize(body, delivery): Normalized {
      const read = new PayloadReader(fail);
      const payload = read.object(body, 'the body', 'an Events API payload {type, ...}');
      const type = own(payload, 'type');
      if (typeof type !== 'string')
        throw fail(type === undefined ? 'type is required (a string)' : `type must be a string, got ${kindOf(type)}`);
      if (type === 'url_verification')
        return {
          events: [],
          reply: echoReply({ challenge: read.optText(own(payload, 'challenge'), 'challenge') ?? '' }),
        };
      if (type !== 'event_callback') return { events: [], ignored: 1 };
      const event = read.object(own(payload, 'event'), 'event', 'an event object {type, ...}');
      const authorization =
        read.optObject(read.optArray(own(payload, 'authorizations'), 'authorizations')[0], 'authorizations[0]') ?? {};
      const ourBot = configuredBot ?? read.optText(own(authorization, 'user_id'), 'authorizations[0].user_id');
      const eventType = own(event, 'type');
      const subtype = own(event, 'subtype');
      if (eventType === 'message' && (subtype === 'message_changed' || subtype === 'message_deleted')) {
        const revision = slackRevision(read, event, ourBot, userSubtypes);
        if (!revision) return { events: [], ignored: 1 };
        const channelId = read.text(own(event, 'channel'), 'event.channel');
        const ts = read.text(own(event, 'ts'), 'event.ts');
        if (revision.kind === 'edit') {
          const edit = userMessage(read, payload, revision.message, 'event.message', revision.senderId, ourBot, {
            channelId,
            conversation: conversationOf(event, channelId),
            now: delivery.now,
            edit: { ts, messageId: `${channelId}:${revision.ts}` },
          });
          return { events: [edit] };
        }
        const deleted = buildEvent({
          id: read.optText(own(payload, 'event_id'), 'event_id') || `${channelId}:${ts}`,
          kind: 'notice',
          detail: 'message_deleted',
          botId: ourBot || undefined,
          conversation: conversationOf(event, channelId),
          sender: { id: revision.senderId ?? 'unknown' },
          // The deletion's own ts: a retry of it is a duplicate, the deleted message's id is not taken.
          platformId: `${channelId}:${ts}`,
          text: '',
          fields: { deleted_ts: revision.ts, team: read.optText(own(payload, 'team_id'), 'team_id') ?? '' },
          timestamp: read.timestamp(ts, 'event.ts', 's', delivery.now),
          revises: {
            kind: 'recall',
            messageId: `${channelId}:${revision.ts}`,
            ...(revision.senderId ? { senderId: revision.senderId } : {}),
          },
          raw: payload,
        });
        return { events: [deleted] };
      }
      const user = own(event, 'user');
      const isUserMessage =
        (eventType === 'message' || eventType === 'app_mention') &&
        userSubtypes.has(subtype as string | undefined) &&
        !own(event, 'bot_id') &&
        typeof user === 'string' &&
        user !== '' &&
        user !== ourBot;
      if (!isUserMessage) return { events: [], ignored: 1 };
      const channelId = read.text(own(event, 'channel'), 'event.channel');
      const conversation = conversationOf(event, channelId);
      return {
        events: [
          userMessage(read, payload, event, 'event', user, ourBot, { channelId, conversation, now: delivery.now }),
        ],
      };
    },

    replyTo: slackReply,

    async resolveMedia(ref) {
      if (!botToken)
        throw new MediaError('bad_url', `channels[${channel.index}].botToken is needed to download Slack files`, false);
      return { url: ref.ref ?? '', headers: { authorization: `Bearer ${botToken}` } };
    },
  };
}

type Conversation = { type: 'private' | 'group'; id: string };

/** A DM (`im`, a `D…` channel) is private, every other channel a group, keyed by the channel. */
function conversationOf(event: Json, channelId: string): Conversation {
  return own(event, 'channel_type') === 'im' || channelId.startsWith('D')
    ? { type: 'private', id: channelId }
    : { type: 'group', id: channelId };
}

/**
 * A reply in a thread answers the thread's parent (`thread_ts`). Slack's message events name
 * the parent's author (`parent_user_id`, docs.slack.dev "Message threading") but not whether a
 * bot wrote it (the parent's `bot_id` is not in the event): `reply_to_bot` is `"true"` when the
 * author is this bot's user, else left to the author's id. The parent's text is not in the
 * event either.
 */
function threadParentIn(
  read: PayloadReader,
  event: Json,
  at: string,
  threadTs: string,
  ourBot: string | undefined,
  fields: Record<string, string>,
): void {
  fields.reply_to = threadTs;
  const parentUser = read.optText(own(event, 'parent_user_id'), `${at}.parent_user_id`);
  if (!parentUser) return;
  fields.reply_to_sender = parentUser;
  if (parentUser === ourBot) fields.reply_to_bot = 'true';
}

/**
 * `chat.postMessage({...params, text})`: in the message's thread (its parent's when it is a
 * reply, else under the message itself). A message in a thread quotes the thread's parent.
 */
export function slackReply({ ids, conversation }: ReplyTarget): ReplyParts {
  const thread = ids.thread_ts || ids.ts;
  const inThread = ids.thread_ts !== undefined && ids.thread_ts !== '' && ids.thread_ts !== ids.ts;
  return {
    params: { channel: conversation.id, ...(thread ? { thread_ts: thread } : {}) },
    ...(ids.ts ? { messageId: ids.ts } : {}),
    ...(inThread ? { quote: quoteOf(ids) ?? { messageId: ids.thread_ts as string } } : {}),
  };
}
