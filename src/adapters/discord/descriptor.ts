import { z } from 'zod';
import { SignatureError } from '../../core/errors.js';
import { sessionKeyOf, type InboundEvent, type MediaRef } from '../../events/inbound.js';
import type { AdapterContext } from '../kit/access-token.js';
import { defineAdapter, type AdapterChannel } from '../kit/descriptor.js';
import { discordGateway } from './gateway.js';
import { deletions } from './revision.js';
import { eventBuilder } from '../kit/event.js';
import { baseUrl, optionalText } from '../kit/settings.js';
import { own, PayloadReader, type Json } from '../kit/shape.js';
import { shapeError, type Adapter, type Normalized } from '../kit/types.js';
import type { ReplyParts, ReplyTarget, ReplyValue } from '../../events/reply.js';
import { QUOTE_TEXT_MAX, quoteOf } from '../kit/reply.js';

const millis = (min: number, max: number, fallback: number) =>
  z.number({ error: 'must be a number of milliseconds' }).int().min(min).max(max).default(fallback);

/**
 * GUILDS | GUILD_MESSAGES | GUILD_MESSAGE_TYPING | DIRECT_MESSAGES | DIRECT_MESSAGE_TYPING |
 * MESSAGE_CONTENT (privileged: turn it on in the Developer Portal). The typing intents bring
 * TYPING_START (discord.com/developers/docs/events/gateway#list-of-intents), a typing signal.
 */
export const DEFAULT_INTENTS = (1 << 0) | (1 << 9) | (1 << 11) | (1 << 12) | (1 << 14) | (1 << 15);
const MESSAGE_CONTENT = 1 << 15;

const settings = z
  .strictObject({
    /** Bot > Token in the Developer Portal: identifies us on the Gateway. */
    botToken: optionalText(),
    /** Gateway intents (a bit field). @default guilds, guild messages, DMs and message content */
    intents: z
      .number({ error: 'must be a number (a bit field of Gateway intents)' })
      .int()
      .min(0)
      .max(2 ** 26)
      .default(DEFAULT_INTENTS),
    apiBaseUrl: baseUrl('https://discord.com/api/v10'),
    /** A fixed Gateway URL instead of the one `GET /gateway/bot` gives. */
    gatewayUrl: optionalText().refine((url) => url === undefined || /^wss?:\/\/[^\s/]/.test(url), {
      error: 'must be a ws:// or wss:// URL',
    }),
    /** A Gateway that sends no Hello this long after the socket opened is dropped and dialled again. */
    helloTimeoutMs: millis(100, 600_000, 20_000),
    /** On several instances one holds the Gateway connection; a survivor takes over within this. */
    leaseMs: millis(300, 600_000, 15_000),
    reconnectMinMs: millis(10, 600_000, 1000),
    reconnectMaxMs: millis(10, 3_600_000, 30_000),
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

/** Discord bots: guild and DM messages over the Gateway (they never come by webhook). */
export const discord = defineAdapter({
  name: 'discord',
  namespace: 'discord',
  secret: { setting: 'botToken', required: true, why: 'connects to the Gateway with it' },
  settings,
  // Nothing is retried by Discord itself; a RESUME replays the events after the last seq we
  // stored, which the exact-id claims of today's window refuse.
  retryHorizonMs: 300_000,
  create: discordAdapter,
});

/** Guild messages with no content, none with any, after which the missing intent is warned about. */
const EMPTY_BEFORE_WARNING = 3;

/**
 * Discord over the Gateway: one connection per bot (a lease on several instances), resumed with
 * its session id and sequence after a drop (the replayed events are duplicates by message id).
 * MESSAGE_CREATE in guild channels (`discord:group:<channel_id>`) and DMs
 * (`discord:<channel_id>`); our own bot's messages are looped; attachments are downloaded.
 */
export function discordAdapter(
  channel: AdapterChannel,
  options: z.output<typeof settings>,
  context: AdapterContext,
): Adapter {
  const namespace = channel.namespace;
  const buildEvent = eventBuilder({ channel: channel.id, adapter: 'discord', namespace, idPrefix: 'discord' });
  const fail = (problem: string) => shapeError(channel, 'a Discord MESSAGE_CREATE', problem);
  let botUserId: string | undefined;
  let emptyGuild = 0;
  let contentSeen = false;
  let warned = false;
  const gateway = options.botToken
    ? discordGateway({
        channel: channel.id,
        botToken: options.botToken,
        intents: options.intents,
        apiBaseUrl: options.apiBaseUrl,
        gatewayUrl: options.gatewayUrl,
        helloTimeoutMs: options.helloTimeoutMs,
        leaseMs: options.leaseMs,
        reconnectMinMs: options.reconnectMinMs,
        reconnectMaxMs: options.reconnectMaxMs,
        context,
        identified: (id) => {
          botUserId = id;
        },
      })
    : undefined;
  if ((options.intents & MESSAGE_CONTENT) === 0) {
    context.logger?.warn(
      { channel: channel.id },
      `channel "${channel.id}": intents lack MESSAGE_CONTENT (1<<15): guild messages will arrive with empty content, except those that mention the bot`,
    );
  }

  /** Warn once when guild messages keep arriving empty: the privileged intent is not granted. */
  function watchContent(empty: boolean): void {
    if (!empty) contentSeen = true;
    if (warned || contentSeen || !empty || ++emptyGuild < EMPTY_BEFORE_WARNING) return;
    warned = true;
    context.logger?.warn(
      { channel: channel.id },
      `channel "${channel.id}": Discord sends guild messages without content: turn on Message Content Intent under Bot > Privileged Gateway Intents in the Developer Portal (intents must include 1<<15)`,
    );
  }

  return {
    name: 'discord',
    replyTo: discordReply,
    channel: channel.id,
    namespace,
    ...(gateway ? { socketTransport: 'gateway', socketDial: gateway.dial } : {}),

    verify(delivery) {
      // Dispatches come over the Gateway socket we opened with the bot token; a POST here is no one's.
      if (delivery.authenticated) return;
      throw new SignatureError(`Channel "${channel.id}" reads the Discord Gateway: it takes no webhook POST`, {
        channel: channel.id,
        stage: 'adapter',
      });
    },

    normalize(body, delivery): Normalized {
      const read = new PayloadReader(fail);
      const dispatch = read.object(body, 'the frame', 'a Gateway dispatch {op: 0, t, s, d}');
      const type = own(dispatch, 't');
      if (type === 'TYPING_START') return typingStart(read, own(dispatch, 'd'), namespace);
      if (type === 'MESSAGE_DELETE' || type === 'MESSAGE_DELETE_BULK')
        return { events: deletions(read, type, own(dispatch, 'd'), botUserId, delivery.now, buildEvent) };
      if (type === 'MESSAGE_UPDATE') {
        const d = read.object(own(dispatch, 'd'), 'd', 'a message object {id, channel_id, ...}');
        // A message Discord changed itself (an embed unfurled) has no new edited_timestamp, and an
        // update may carry only some fields (older docs: only id and channel_id are sure).
        const edited = read.optText(own(d, 'edited_timestamp'), 'd.edited_timestamp');
        if (!edited || typeof own(d, 'content') !== 'string' || own(d, 'author') === undefined)
          return { events: [], ignored: 1 };
        return { events: [messageEvent(read, d, delivery.now, edited)] };
      }
      if (type !== 'MESSAGE_CREATE') return { events: [], ignored: 1 };
      const d = read.object(own(dispatch, 'd'), 'd', 'a message object {id, channel_id, author, content, ...}');
      return { events: [messageEvent(read, d, delivery.now)] };
    },
  };

  /**
   * The event of a message: a MESSAGE_CREATE's, or with `edited` (its edited_timestamp) a
   * MESSAGE_UPDATE's, which reads `(edited) …` (as Telegram's edits do), the new text in
   * `fields.edited_text`, and revises the message: an id of its own (the message's would make it
   * a duplicate of it), the same for a RESUME's replay of it.
   */
  function messageEvent(read: PayloadReader, d: Json, now: number, edited?: string): InboundEvent {
    const id = read.text(own(d, 'id'), 'd.id');
    const channelId = read.text(own(d, 'channel_id'), 'd.channel_id');
    const guildId = read.optText(own(d, 'guild_id'), 'd.guild_id');
    const author = read.object(own(d, 'author'), 'd.author', 'a user object {id, username}');
    const authorId = read.text(own(author, 'id'), 'd.author.id');
    const name =
      read.optText(own(author, 'global_name'), 'd.author.global_name') ||
      read.optText(own(author, 'username'), 'd.author.username');
    const content = read.optText(own(d, 'content'), 'd.content') ?? '';
    const media: MediaRef[] = read.optArray(own(d, 'attachments'), 'd.attachments').flatMap((item, i) => {
      const at = `d.attachments[${i}]`;
      const file = read.object(item, at, 'an attachment {id, filename, url}');
      const url = read.optText(own(file, 'url'), `${at}.url`);
      if (!url) return [];
      const mimeType = read.optText(own(file, 'content_type'), `${at}.content_type`);
      const fileName = read.optText(own(file, 'filename'), `${at}.filename`);
      const size = read.optNumber(own(file, 'size'), `${at}.size`);
      return [{ url, ...(mimeType ? { mimeType } : {}), ...(fileName ? { fileName } : {}), ...(size ? { size } : {}) }];
    });
    const names = new Map<string, string>();
    const mentions = read.optArray(own(d, 'mentions'), 'd.mentions').flatMap((item, i) => {
      const user = read.object(item, `d.mentions[${i}]`, 'a user object {id}');
      const mentioned = read.optText(own(user, 'id'), `d.mentions[${i}].id`);
      if (!mentioned) return [];
      names.set(
        mentioned,
        read.optText(own(user, 'global_name'), `d.mentions[${i}].global_name`) ||
          read.optText(own(user, 'username'), `d.mentions[${i}].username`) ||
          mentioned,
      );
      return [mentioned];
    });
    if (guildId && !edited)
      watchContent(content === '' && media.length === 0 && read.optArray(own(d, 'embeds'), 'd.embeds').length === 0);
    // Mentions read as @name, as a user sees them, not as <@id> markup.
    const text = content
      .replace(/<@!?(\d+)>/g, (markup, mentioned: string) =>
        names.has(mentioned) ? `@${names.get(mentioned)}` : markup,
      )
      .trim();
    const fields: Record<string, string> = { message_id: id, channel_id: channelId };
    if (guildId) fields.guild_id = guildId;
    repliedIn(read, d, botUserId, fields);
    if (edited) fields.edited_text = text;
    const stamp = edited ?? read.optText(own(d, 'timestamp'), 'd.timestamp');
    const at = stamp ? Date.parse(stamp) : Number.NaN;
    return buildEvent({
      kind: 'message',
      detail: guildId ? 'group' : 'private',
      subType: edited ? 'edited' : undefined,
      botId: botUserId,
      conversation: { type: guildId ? 'group' : 'private', id: channelId },
      sender: { id: authorId, ...(name ? { name } : {}) },
      platformId: edited ? `${id}:edited:${edited}` : id,
      text: edited ? `(edited) ${text}` : text,
      media,
      mentions,
      fields,
      timestamp: read.timestamp(
        Number.isFinite(at) ? at : undefined,
        edited ? 'd.edited_timestamp' : 'd.timestamp',
        'ms',
        now,
      ),
      revises: edited ? { kind: 'edit', messageId: id, senderId: authorId } : undefined,
      raw: d,
    });
  }
}

/**
 * TYPING_START `{channel_id, guild_id?, user_id, timestamp}`: a user typing in a guild channel or
 * a DM (discord.com/developers/docs/events/gateway-events#typing-start). No event: a typing signal
 * for the session their next message will have (contract §13).
 */
function typingStart(read: PayloadReader, data: unknown, namespace: string): Normalized {
  const d = read.object(data, 'd', 'a typing start {channel_id, user_id, timestamp}');
  const channelId = read.text(own(d, 'channel_id'), 'd.channel_id');
  const guildId = read.optText(own(d, 'guild_id'), 'd.guild_id');
  const senderId = read.text(own(d, 'user_id'), 'd.user_id');
  const sessionKey = sessionKeyOf(namespace, { type: guildId ? 'group' : 'private', id: channelId });
  return { events: [], typing: [{ sessionKey, senderId }] };
}

/**
 * The message a Discord message replies to, into `fields`: `message_reference.message_id`, except
 * on a forward (reference type 1, discord.com/developers/docs/resources/message#message-reference-types),
 * and its author and text from `referenced_message`, which replies carry (null once the message
 * was deleted). `reply_to_bot` is `"true"` when the author is this bot's user (READY's
 * `user.id`), `"false"` when `author.bot` is absent or false (a person); another bot's message
 * leaves it to the author's id.
 */
function repliedIn(read: PayloadReader, d: Json, botUserId: string | undefined, fields: Record<string, string>): void {
  const reference = read.optObject(own(d, 'message_reference'), 'd.message_reference');
  if (!reference || own(reference, 'type') === 1) return;
  const replied = read.optText(own(reference, 'message_id'), 'd.message_reference.message_id');
  if (!replied) return;
  fields.reply_to = replied;
  const quoted = read.optObject(own(d, 'referenced_message'), 'd.referenced_message');
  const author = quoted && read.optObject(own(quoted, 'author'), 'd.referenced_message.author');
  const authorId = author && read.optText(own(author, 'id'), 'd.referenced_message.author.id');
  if (author && authorId) {
    fields.reply_to_sender = authorId;
    if (authorId === botUserId) fields.reply_to_bot = 'true';
    // A webhook's message has no bot flag either, and it is no person's.
    else if (own(author, 'bot') !== true && own(quoted ?? {}, 'webhook_id') === undefined)
      fields.reply_to_bot = 'false';
  }
  const text = quoted && read.optText(own(quoted, 'content'), 'd.referenced_message.content');
  if (text) fields.reply_to_text = text.slice(0, QUOTE_TEXT_MAX);
}

/** `POST /channels/{channel_id}/messages {content, message_reference: {message_id}}`; `message_reference` is the quote. */
export function discordReply({ ids, conversation }: ReplyTarget): ReplyParts {
  const params: Record<string, ReplyValue> = { channel_id: ids.channel_id ?? conversation.id };
  if (ids.message_id) params.message_reference = { message_id: ids.message_id };
  const quote = quoteOf(ids);
  return { params, ...(ids.message_id ? { messageId: ids.message_id } : {}), ...(quote ? { quote } : {}) };
}
