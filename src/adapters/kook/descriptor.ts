import { z } from 'zod';
import { RequestError, SignatureError } from '../../core/errors.js';
import { safeEqual } from '../../core/signing.js';
import type { AdapterContext } from '../kit/access-token.js';
import { defineAdapter, type AdapterChannel } from '../kit/descriptor.js';
import { eventBuilder } from '../kit/event.js';
import { platformJson } from '../kit/platform-api.js';
import { baseUrl, optionalText } from '../kit/settings.js';
import { own, PayloadReader, type Json } from '../kit/shape.js';
import type { ReplyParts, ReplyTarget } from '../../events/reply.js';
import { quoteOf } from '../kit/reply.js';
import { echoReply, shapeError, type Adapter, type Normalized } from '../kit/types.js';
import { inflated, KookCipher, looksLikeJson } from './body.js';
import { kookGateway } from './gateway.js';
import { kookMessage, kookSystemEvent, type KookScope } from './message.js';

const millis = (min: number, max: number, fallback: number) =>
  z.number({ error: 'must be a number of milliseconds' }).int().min(min).max(max).default(fallback);

const settings = z.strictObject({
  /** Bot > Connection mode > Webhook > Verify Token: every event's `d.verify_token` must be it. */
  verifyToken: optionalText(),
  /** Bot > Connection mode > Webhook > Encrypt Key: bodies then arrive as `{"encrypt": ...}`. */
  encryptKey: optionalText(),
  /** The bot's Token: our bot's user id is read with it (`GET /api/v3/user/me`) unless `botId` is set. */
  botToken: optionalText(),
  /** Our bot's user id: its own messages are looped, an @ of it addresses the bots. */
  botId: optionalText(),
  /** How events arrive: KOOK pushes to our webhook, or we hold its WebSocket gateway open (`ws`, with `botToken`). */
  transport: z.enum(['webhook', 'ws'], { error: 'must be "webhook" or "ws"' }).default('webhook'),
  /** On several instances one holds the gateway connection; a survivor takes over within this. */
  leaseMs: millis(300, 600_000, 15_000),
  reconnectMinMs: millis(10, 600_000, 1000),
  reconnectMaxMs: millis(10, 3_600_000, 60_000),
  /** KOOK's HTTP API. */
  apiBaseUrl: baseUrl('https://www.kookapp.cn'),
});

/** KOOK (formerly Kaiheila) bots: the webhook, or the WebSocket gateway. */
export const kook = defineAdapter({
  name: 'kook',
  namespace: 'kook',
  secret: { setting: 'verifyToken', required: true, why: "checks every event's d.verify_token" },
  secretFor: (values) =>
    values.transport === 'ws'
      ? { setting: 'botToken', required: true, why: 'connects to the gateway with it' }
      : { setting: 'verifyToken', required: true, why: "checks every event's d.verify_token" },
  settings,
  // KOOK retries a delivery not answered 200 within 1 s after about 2, 4, 8, 16, 32 and 64 s,
  // up to 5 failures (developer.kookapp.cn/doc/webhook; PLATFORMS.md S6): about 2 min in all.
  retryHorizonMs: 130_000,
  create: kookAdapter,
});

/** Inflated bodies stay under this when the service's body limit is not given. */
const DEFAULT_INFLATED_MAX = 1_048_576;

/**
 * KOOK's webhook (developer.kookapp.cn/doc/webhook): a body deflated unless the callback URL
 * has `compress=0` (inflated whenever it is not JSON), `{"encrypt"}` with an Encrypt Key, then
 * `{"s": 0, "sn", "d"}` whose `d.verify_token` must be the Verify Token (401 otherwise: KOOK
 * signs nothing, the token and the encryption are all it offers). The challenge
 * (`d.type` 255, `channel_type` WEBHOOK_CHALLENGE) is answered `{"challenge"}`. `d.msg_id` is
 * the platform id: KOOK's retries within about 2 min are duplicates. With `"transport": "ws"` the
 * same events come over the gateway (gateway.ts) instead, and a POST is refused.
 */
export function kookAdapter(
  channel: AdapterChannel,
  options: z.output<typeof settings>,
  context: AdapterContext,
): Adapter {
  const verifying = channel.verify;
  const { verifyToken, encryptKey, botToken, apiBaseUrl } = options;
  const socket = options.transport === 'ws';
  let botId = options.botId;
  const where = `channels[${channel.index}]`;
  // Our bot's id, for the loop guard and the mentions of it; events before the answer do without it.
  const learned =
    botId || !botToken
      ? Promise.resolve()
      : platformJson(`${apiBaseUrl}/api/v3/user/me`, { authorization: `Bot ${botToken}` }, AbortSignal.timeout(10_000))
          .then((answer) => {
            const data = (answer as { data?: { id?: unknown } } | undefined)?.data;
            if (typeof data?.id === 'string' && data.id !== '') botId = data.id;
            else context.logger?.warn({ channel: channel.id }, 'KOOK /api/v3/user/me named no bot id; set botId');
          })
          .catch((error: unknown) => {
            context.logger?.warn(
              { channel: channel.id, err: error },
              `KOOK /api/v3/user/me failed: set ${where}.botId so the bot's own messages are looped`,
            );
          });

  const gateway =
    socket && botToken
      ? kookGateway({
          channel: channel.id,
          botToken,
          apiBaseUrl,
          leaseMs: options.leaseMs,
          reconnectMinMs: options.reconnectMinMs,
          reconnectMaxMs: options.reconnectMaxMs,
          context,
          botId: () => botId,
          learned,
        })
      : undefined;
  const cipher = encryptKey ? new KookCipher(encryptKey) : undefined;
  const errorContext = { channel: channel.id, stage: 'adapter' };
  const fail = (problem: string) => shapeError(channel, 'a KOOK event', problem);
  const unreadable = (problem: string, code: 'bad_request' | 'body_too_large' = 'bad_request') =>
    new RequestError(
      code,
      code === 'bad_request' ? 400 : 413,
      `Body of channel "${channel.id}" cannot be read: ${problem}`,
      errorContext,
    );
  const buildEvent = eventBuilder({
    channel: channel.id,
    adapter: 'kook',
    namespace: channel.namespace,
    idPrefix: 'kook',
  });

  function checkToken(given: unknown): void {
    if (!verifying || !verifyToken) return;
    if (typeof given !== 'string' || !safeEqual(given, verifyToken)) {
      throw new SignatureError(
        `Token mismatch on channel "${channel.id}": d.verify_token is not ${where}.verifyToken (the bot's Webhook Verify Token)`,
        errorContext,
        'token_mismatch',
      );
    }
  }

  return {
    name: 'kook',
    channel: channel.id,
    namespace: channel.namespace,
    botIds: options.botId ? [options.botId] : [],
    replyTo: kookReply,
    ...(gateway ? { socketTransport: 'gateway', socketDial: gateway.dial } : {}),

    verify(delivery) {
      // Nothing to check on a webhook's bytes: KOOK signs nothing; the token inside is checked once read.
      if (!socket || delivery.authenticated) return;
      // Events come over the gateway socket we opened with the bot token; a POST here is no one's.
      throw new SignatureError(
        `Channel "${channel.id}" reads the KOOK gateway ("transport": "ws"): it takes no webhook POST`,
        errorContext,
      );
    },

    parseBody(raw, limits, json) {
      const maxBytes = limits.bodyLimitBytes ?? DEFAULT_INFLATED_MAX;
      let bytes = raw;
      if (!looksLikeJson(raw)) {
        try {
          bytes = inflated(raw, maxBytes);
        } catch (error) {
          const problem = (error as Error).message;
          throw unreadable(problem, problem.startsWith('it inflates') ? 'body_too_large' : 'bad_request');
        }
      }
      const envelope = json(bytes);
      const outer =
        typeof envelope === 'object' && envelope !== null && !Array.isArray(envelope) ? (envelope as Json) : undefined;
      const encrypted = outer ? own(outer, 'encrypt') : undefined;
      if (encrypted === undefined) {
        if (cipher && verifying && !socket)
          throw new SignatureError(
            `Channel "${channel.id}" has an encryptKey, so events must arrive encrypted ({"encrypt": ...})`,
            errorContext,
          );
        return envelope;
      }
      if (typeof encrypted !== 'string') throw fail('encrypt must be a base64 string');
      if (!cipher)
        throw unreadable(
          `it is encrypted but the channel has no encryptKey: set ${where}.encryptKey to the bot's Encrypt Key`,
        );
      let plain: Buffer;
      try {
        plain = cipher.open(encrypted);
      } catch (error) {
        throw unreadable(
          `cannot decrypt it (${(error as Error).message}): is ${where}.encryptKey the bot's Encrypt Key?`,
        );
      }
      return json(plain);
    },

    normalize(envelope, delivery): Normalized {
      const read = new PayloadReader(fail);
      const body = read.object(envelope, 'the body', 'a KOOK event {s: 0, sn, d}');
      const d = read.object(own(body, 'd'), 'd', 'the event {type, channel_type, verify_token, ...}');
      // Gateway frames came over the socket we opened with the bot token.
      if (!delivery.authenticated) checkToken(own(d, 'verify_token'));
      if (own(d, 'channel_type') === 'WEBHOOK_CHALLENGE')
        return { events: [], reply: echoReply({ challenge: read.text(own(d, 'challenge'), 'd.challenge') }) };
      const signal = read.optNumber(own(body, 's'), 's');
      if (signal !== 0) return { events: [], ignored: 1 };
      const scope: KookScope = { read, fail, botId, now: delivery.now, buildEvent };
      const type = read.optNumber(own(d, 'type'), 'd.type');
      if (type === 255) return { events: [kookSystemEvent(scope, d)] };
      const event = kookMessage(scope, d);
      // Our bot's own messages, when its id was learned from the API rather than configured.
      if (!event || (botId !== undefined && !options.botId && event.sender.id === botId))
        return { events: [], ignored: 1 };
      return { events: [event] };
    },
  };
}

/**
 * A reply: `POST /api/v3/message/create {target_id: <channel>, content, quote}` in a channel,
 * `POST /api/v3/direct-message/create {target_id: <user>, content, quote}` in a direct chat
 * (developer.kookapp.cn/doc/http/message, …/http/direct-message); `quote` is the message's
 * `msg_id`. A reply's own quote is its `extra.quote.rong_id`.
 */
export function kookReply({ ids, conversation }: ReplyTarget): ReplyParts {
  const quote = quoteOf(ids);
  return {
    params: {
      target_id: conversation.id,
      ...(ids.msg_id ? { quote: ids.msg_id } : {}),
      ...(ids.chat_code ? { chat_code: ids.chat_code } : {}),
    },
    ...(ids.msg_id ? { messageId: ids.msg_id } : {}),
    ...(quote ? { quote } : {}),
  };
}
