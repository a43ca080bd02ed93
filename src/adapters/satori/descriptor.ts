import { z } from 'zod';
import { RequestError, SignatureError } from '../../core/errors.js';
import type { InboundEvent } from '../../events/inbound.js';
import type { ReplyParts, ReplyTarget } from '../../events/reply.js';
import type { AdapterContext } from '../kit/access-token.js';
import { defineAdapter, type AdapterChannel } from '../kit/descriptor.js';
import { eventBuilder, type EventParts } from '../kit/event.js';
import { quoteOf } from '../kit/reply.js';
import { optionalText } from '../kit/settings.js';
import { own, PayloadReader } from '../kit/shape.js';
import { shapeError, type Adapter, type Normalized } from '../kit/types.js';
import { satoriEvent } from './event.js';
import { satoriGateway } from './gateway.js';
import { Logins } from './logins.js';

const millis = (min: number, max: number, fallback: number) =>
  z.number({ error: 'must be a number of milliseconds' }).int().min(min).max(max).default(fallback);

/** A namespace as session keys hold it: no `:` (it separates the key's parts), no blanks. */
const NAMESPACE = /^[A-Za-z0-9_.-]{1,64}$/;

const settings = z
  .strictObject({
    /** The Satori server's base URL: events at `<url>/v1/events`, the API at `<url>/v1/<resource>.<method>`. */
    url: z
      .string({ error: 'is required (the Satori server, e.g. "http://127.0.0.1:5140/satori")' })
      .refine((url) => /^https?:\/\/[^\s/]/i.test(url), {
        error: 'must be an http:// or https:// URL (the Satori server, e.g. "http://127.0.0.1:5140/satori")',
      })
      .transform((url) => url.replace(/\/+$/, '')),
    /** The server's token: in IDENTIFY on the event socket and `Authorization: Bearer` on API calls. */
    token: optionalText(),
    /**
     * The namespace of each login platform (`{"onebot": "qq"}`): its conversations' session keys
     * are `<namespace>:<channel.id>`. An unmapped platform's are the channel's namespace
     * (`satori` unless the channel sets `namespace`) and `<platform>:<channel.id>`.
     */
    namespaces: z
      .record(
        z.string(),
        z.string({ error: 'must be a string' }).regex(NAMESPACE, {
          error: 'must be a namespace of letters, digits, "_", "." or "-" (no ":")',
        }),
        { error: 'must be an object {platform: namespace}' },
      )
      .default({}),
    reconnectMinMs: millis(10, 600_000, 1000),
    reconnectMaxMs: millis(10, 3_600_000, 30_000),
    /** On several instances one holds the event socket; a survivor takes it over within this. */
    leaseMs: millis(300, 600_000, 15_000),
    /** How long an action (`POST /v1/channels/<id>/actions/<resource>.<method>`) waits for the server. */
    actionTimeoutMs: millis(100, 600_000, 10_000),
  })
  .check((ctx) => {
    const { reconnectMinMs, reconnectMaxMs } = ctx.value;
    if (reconnectMaxMs < reconnectMinMs)
      ctx.issues.push({
        code: 'custom',
        path: ['reconnectMaxMs'],
        message: `must be at least reconnectMinMs (${reconnectMinMs})`,
        input: ctx.value,
      });
  });

/** A Satori server (Koishi's server plugin, Chronocat, LLBot): its event socket and HTTP API. */
export const satori = defineAdapter({
  name: 'satori',
  namespace: 'satori',
  secret: { setting: 'token', required: true, why: 'identifies to the Satori server with it' },
  settings,
  // Events come over the socket we dial: Satori redelivers nothing on its own (a resume replays
  // what came after the `sn` we name). Today's exact-id window (dedup.idTtlMs).
  retryHorizonMs: 300_000,
  create: satoriAdapter,
});

/** `<resource>.<method>`, as the Satori API names its calls (`message.create`, `guild.member.get`). */
const ACTION = /^[a-z][a-z0-9_-]*(?:\.[a-z][a-z0-9_-]*){1,3}$/i;

/**
 * Satori (satori.chat): we dial `<url>/v1/events` under a lease (gateway.ts) and read each event
 * (event.ts); every login the server announces is one of our bots, its platform mapped to a
 * namespace by `namespaces`. Actions go to `POST <url>/v1/<resource>.<method>` with the bot's
 * `Satori-Platform` and `Satori-User-ID`.
 */
export function satoriAdapter(
  channel: AdapterChannel,
  options: z.output<typeof settings>,
  context: AdapterContext,
): Adapter {
  const token = options.token;
  const base = options.url;
  const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const errorContext = { channel: channel.id, stage: 'adapter' };
  const fail = (problem: string) => shapeError(channel, 'a Satori event', problem);
  const logins = new Logins(context, `satori:logins:${channel.id}`);
  const mapped = new Map(Object.entries(options.namespaces));
  const asIs = (id: string) => id;
  const placeOf = (platform: string) => {
    const mappedTo = mapped.get(platform);
    return mappedTo
      ? { namespace: mappedTo, scoped: asIs }
      : { namespace: channel.namespace, scoped: (id: string) => `${platform}:${id}` };
  };
  // The channel's own namespace: the first mapped one, else the channel's.
  const namespace = mapped.values().next().value ?? channel.namespace;
  const builders = new Map<string, (parts: EventParts) => InboundEvent>();
  const builderOf = (ns: string) => {
    let build = builders.get(ns);
    if (!build)
      builders.set(
        ns,
        (build = eventBuilder({
          channel: channel.id,
          adapter: 'satori',
          namespace: ns,
          idPrefix: 'satori',
          idLength: 12,
        })),
      );
    return build;
  };
  const gateway = satoriGateway({
    channel: channel.id,
    url: `${base.replace(/^http/i, 'ws')}/v1/events`,
    token,
    leaseMs: options.leaseMs,
    reconnectMinMs: options.reconnectMinMs,
    reconnectMaxMs: options.reconnectMaxMs,
    context,
    logins,
  });

  return {
    name: 'satori',
    channel: channel.id,
    namespace,
    namespaces: [...new Set([namespace, channel.namespace, ...mapped.values()])],
    // One server carries many logins: two of them in one group deliver one message twice.
    severalBots: true,
    namespaceOfBot(botId) {
      const platform = botId === undefined ? undefined : logins.platformOf(botId);
      return platform === undefined ? undefined : placeOf(platform).namespace;
    },
    socketTransport: 'ws',
    socketDial: gateway.dial,
    actionTimeoutMs: options.actionTimeoutMs,
    actionApi: {
      url: `${base}/v1`,
      headers: auth,
      setting: 'url',
      bot: () => logins.only(),
      async route(action, params, botId) {
        if (!ACTION.test(action))
          throw new RequestError(
            'bad_action',
            400,
            `Channel "${channel.id}" takes Satori API calls named <resource>.<method> (message.create), not "${action.slice(0, 64)}"`,
            { channel: channel.id, stage: 'connections' },
          );
        const login = await logins.resolve(botId);
        if (!login)
          throw new RequestError(
            'bot_not_connected',
            404,
            `${botId === undefined ? 'Several logins or none are' : `Login ${botId} is not`} known on channel "${channel.id}": name the bot with ?self_id= (known: ${logins.ids().join(', ') || 'none'})`,
            { channel: channel.id, stage: 'connections' },
          );
        return {
          method: 'POST',
          path: `/${action}`,
          body: params,
          // satori.chat protocol/api; Koishi before server 2.x read X-Platform and X-Self-ID.
          headers: {
            'satori-platform': login.platform,
            'satori-user-id': login.userId,
            'x-platform': login.platform,
            'x-self-id': login.userId,
          },
        };
      },
    },
    sendsMessage: (action) => action === 'message.create',
    sentByAction(action, answer, sent) {
      // `message.create` answers the messages it made (`Message[]`, satori.chat resources/message).
      const botId = sent?.botId;
      const platform = botId === undefined ? undefined : logins.platformOf(botId);
      const channelId = sent?.params.channel_id;
      if (action !== 'message.create' || !Array.isArray(answer) || !platform || typeof channelId !== 'string')
        return undefined;
      const id = (answer[0] as { id?: unknown } | undefined)?.id;
      return typeof id === 'string' && id ? `${platform}:${botId}:${channelId}:${id}` : undefined;
    },
    replyTo: satoriReply,

    async resolveMedia(ref) {
      // An `internal:` resource is read through the server (satori.chat advanced/resource).
      return { url: `${base}/v1/proxy/${encodeURIComponent(ref.ref ?? '')}`, headers: auth };
    },

    verify(delivery) {
      if (delivery.authenticated) return;
      // Events come over the socket we dial with the token; a POST here is no one's.
      throw new SignatureError(
        `Channel "${channel.id}" reads the Satori server's event socket (${base}/v1/events): it takes no HTTP POST`,
        errorContext,
      );
    },

    normalize(frame, delivery): Normalized {
      const read = new PayloadReader(fail);
      const envelope = read.object(frame, 'the frame', 'a Satori frame {op, body}');
      if (own(envelope, 'op') !== 0) return { events: [], ignored: 1 };
      const event = read.object(own(envelope, 'body'), 'body', 'the event {type, login, channel, user, message, ...}');
      return satoriEvent({ read, fail, placeOf, builderOf, logins, now: delivery.now }, event);
    },
  };
}

/**
 * A reply: `message.create {channel_id, content}`, quoting with a leading `<quote id="…"/>`
 * element (satori.chat resources/message, protocol/elements); the bot is the reply's `botId`.
 */
export function satoriReply({ ids, conversation }: ReplyTarget): ReplyParts {
  const quote = quoteOf(ids);
  const channelId = ids.channel_id ?? conversation.id;
  return {
    params: { channel_id: channelId, ...(ids.message_id ? { message_id: ids.message_id } : {}) },
    ...(ids.message_id ? { messageId: ids.message_id } : {}),
    ...(quote ? { quote } : {}),
  };
}
