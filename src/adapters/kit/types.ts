import type { SentMessage } from '../../events/context.js';
import type { ChannelConfig } from '../../config/schema.js';
import { RequestError, SignatureError, StaleTimestampError, type IntakeError } from '../../core/errors.js';
import { safeEqual } from '../../core/signing.js';
import type { InboundEvent, MediaRef, ResolvedMedia } from '../../events/inbound.js';
import type { PollSpec, SocketDial, SocketFrame, SocketPeer } from '../../events/connection.js';
import type { PlatformReply, RawDelivery } from '../../events/transport.js';
import type { ForwardNode, ReplyParts, ReplyTarget } from '../../events/reply.js';

export type { PlatformReply, RawDelivery } from '../../events/transport.js';

export interface Normalized {
  events: InboundEvent[];
  /** Answer given instead of the ingest summary (Slack's url_verification challenge). */
  reply?: PlatformReply;
  /** Deliveries acknowledged but not turned into events (receipts, meta events), for counting. */
  ignored?: number;
  /** Messages our bot reports it sent (OneBot `message_sent`): remembered so a reply to one addresses the bots. */
  sent?: SentMessage[];
  /**
   * Senders the platform says are typing (Discord `TYPING_START`, NapCat `input_status`): each
   * holds the open buffer of that sender in that session a little longer (contract §13). Not
   * counted in `ignored`: signals come every few seconds, and each ignored delivery is trailed.
   */
  typing?: TypingSignal[];
}

/** One HTTP request of an action on a platform's API: the path goes after `actionApi.url`. */
export interface ActionRequest {
  method: string;
  path: string;
  body: unknown;
  /** Headers of this request besides `actionApi.headers` (Satori's `Satori-Platform` and `Satori-User-ID` of the bot). */
  headers?: Readonly<Record<string, string>>;
}

/** A sender typing in a session, as the events of that sender would name both. */
export interface TypingSignal {
  sessionKey: string;
  senderId: string;
}

/**
 * A platform adapter: verify the raw bytes, then turn the parsed body into events. It drops
 * nothing: deciding duplicates is the core's job.
 */
export interface Adapter {
  readonly name: string;
  readonly channel: string;
  /** Id space of users and conversations. */
  readonly namespace: string;
  /**
   * Every namespace the channel's events may be in, when it is more than `namespace` (a Satori
   * server's logins, each platform its own): each is correlated with the other channels'.
   */
  readonly namespaces?: readonly string[];
  /** The namespace of one bot's messages, where a channel's bots are in several (a Satori login's platform). @default `namespace` */
  namespaceOfBot?(botId: string | undefined): string | undefined;
  /**
   * Throws SignatureError when the delivery is not authentic. A promise where the check needs
   * the platform's keys fetched first (a JWT against a JWKS: Google Chat, Bot Framework).
   */
  verify(delivery: RawDelivery): void | Promise<void>;
  normalize(body: unknown, delivery: RawDelivery): Normalized;
  /**
   * Parse the verified bytes for `normalize` when they are not plain JSON (WeChat's and WeCom's
   * XML, Feishu's encrypted JSON), within the same limits (`json` parses JSON within them);
   * throws a 400 RequestError. `bodyLimitBytes` bounds what a compressed body may inflate to
   * (KOOK's zlib bodies). @default JSON, as `server.maxDepth` and `server.maxKeys` allow
   */
  parseBody?(
    raw: Buffer,
    limits: { maxDepth: number; maxKeys: number; bodyLimitBytes?: number },
    json: (bytes: Buffer) => unknown,
  ): unknown;
  /** The Content-Types its webhook takes (with `parseBody`; `names` goes in the 415). @default JSON */
  readonly bodyTypes?: { accepts(contentType: string | undefined): boolean; readonly names: string };
  /** Answer a GET on the webhook URL (WhatsApp's hub.challenge). */
  handshake?(delivery: RawDelivery): PlatformReply;
  /**
   * The reply handle of one bot's copy of a message: the parameters the platform's reply call
   * needs, this bot's message id, and the quoted message (docs/output.md has the table).
   */
  replyTo?(target: ReplyTarget): ReplyParts;
  /** Exchange a platform media handle (`MediaRef.ref`) for a URL to download. */
  resolveMedia?(ref: MediaRef, signal: AbortSignal): Promise<ResolvedMedia>;
  /**
   * The id of a signed delivery (Standard Webhooks `webhook-id`), once verified: a replay of
   * the same signed bytes inside the signature tolerance is then a duplicate even when the
   * events carry no ids of their own.
   */
  deliveryId?(delivery: RawDelivery): string | undefined;
  /**
   * The delivery id names a transaction the platform never changes (Matrix `txnId`): each event
   * of it claims the id too, even one with a platform id, so a replay records nothing whatever
   * it carries. @default false: only events without a platform id claim it
   */
  readonly deliveryClaimsAll?: boolean;
  /**
   * Requests the platform sends under the webhook URL rather than to it (Matrix: `PUT
   * /_matrix/app/v1/transactions/<txnId>`): the method and the path prefixes taken there, each
   * followed by one path segment; `RawDelivery.path` then holds the rest of the URL.
   */
  readonly webhookPath?: { readonly method: string; readonly prefixes: readonly string[] };
  /** A refused request on `webhookPath`, answered the platform's way (Matrix `{"errcode","error"}`). */
  refusal?(error: IntakeError): PlatformReply;
  /** Bot account ids configured on the channel (bot-loop guard). */
  readonly botIds?: readonly string[];
  /**
   * One channel of this adapter can carry several bot accounts (each OneBot delivery names its
   * bot): their copies of one group message are then correlated even with no other channel in
   * the namespace. @default false: one account per channel
   */
  readonly severalBots?: boolean;
  /**
   * The channel's events come over WebSockets: this name goes in `transport` of
   * `/v1/connections`. With `acceptSocket` bots connect at the webhook URL (OneBot
   * `ws-reverse`); with `socketDial` we connect to the bot (OneBot `ws`).
   */
  readonly socketTransport?: string;
  /** Authenticate a WebSocket upgrade (`body` empty); throws the 400/401/403 that refuses it. */
  acceptSocket?(handshake: RawDelivery): SocketPeer;
  /** The bot's WebSocket we dial, held by one instance at a time. */
  readonly socketDial?: SocketDial;
  /** A transport we pull (Telegram `getUpdates`), by the one instance holding its lease. */
  readonly poll?: PollSpec;
  /** Where actions go on a channel without sockets (OneBot's HTTP API: `POST <url>/<action>`). */
  readonly actionApi?: {
    readonly url: string;
    readonly headers: Readonly<Record<string, string>>;
    /**
     * The request of an action when it is not `POST <url>/<action>` with the params (Matrix:
     * `send` is a PUT to the room's send URL); throws the 400 of an action or params it cannot send.
     * `botId` is the bot the action goes through (Satori: the login whose headers it carries).
     */
    route?(action: string, params: Record<string, unknown>, botId?: string): ActionRequest | Promise<ActionRequest>;
    /** The setting the URL comes from, as an error names it. @default "apiUrl" */
    readonly setting?: string;
    /**
     * The bot of an action that names none, on a channel of one bot that learns its id from its
     * events (Milky): its sends are then told from a person's on the same account.
     */
    bot?(): string | undefined;
  };
  /** How long an action on this channel waits for the bot's answer, ms. */
  readonly actionTimeoutMs?: number;
  /**
   * The id of the message an action's answer says the bot sent (OneBot `send_msg`), so a reply to
   * it addresses the bots; `sent` holds the action's params and the bot, for a platform whose
   * message ids are only unique within a conversation (Milky's `message_seq`).
   */
  sentByAction?(
    action: string,
    answer: unknown,
    sent?: { params: Record<string, unknown>; botId: string | undefined },
  ): string | undefined;
  /** Whether an action sends a message (its answer then goes to `sentByAction`): our bot's own report of it is not a person's. */
  sendsMessage?(action: string): boolean;
  /** The nodes of a merged forward in the answer to `get_forward_msg` (OneBot); throws when the answer is a refusal. */
  forwardNodes?(answer: unknown): ForwardNode[];
  /**
   * Read a merged forward through the platform's own API (Feishu: a GET of the message with the
   * tenant token) rather than an action sent through the bot; throws when the platform refuses.
   * Present only when the channel can (Feishu: with `appId` and `appSecret`).
   */
  readForward?(id: string, signal: AbortSignal): Promise<ForwardNode[]>;
  /** A socket frame the connection keeps (meta event, action response); undefined: an event to ingest. */
  socketFrame?(frame: Buffer): SocketFrame | undefined;
}

const ECHO_HEADERS = Object.freeze({ 'x-content-type-options': 'nosniff' });

/**
 * The answer that echoes a value the caller chose (a URL check's echostr, a challenge): text/plain,
 * or JSON for an object, and `X-Content-Type-Options: nosniff`, so a browser sent to the webhook
 * URL with a crafted value shows text and never renders a page from it.
 */
export function echoReply(body: string | Readonly<Record<string, unknown>>): PlatformReply {
  return typeof body === 'string'
    ? { status: 200, body, contentType: 'text/plain', headers: ECHO_HEADERS }
    : { status: 200, body, headers: ECHO_HEADERS };
}

/** One header's value (the first, when repeated). */
export function headerOf(delivery: RawDelivery, name: string): string | undefined {
  const value = delivery.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** A signing secret as the adapter uses it: none when the channel says `"verify": false`. */
export function verifiedSecret(channel: ChannelConfig, secret: string | undefined): string | undefined {
  return channel.verify ? secret : undefined;
}

/** A 400 for a body that is not what the platform sends (`Body of channel "wa" is not a WhatsApp webhook: ...`). */
export function shapeError(channel: ChannelConfig, what: string, problem: string): RequestError {
  return new RequestError('bad_shape', 400, `Body of channel "${channel.id}" is not ${what}: ${problem}`, {
    channel: channel.id,
    stage: 'adapter',
  });
}

/**
 * Compare a signature header with its expected value in constant time, or throw the 401 that
 * says whether it was missing or wrong.
 */
export function checkSignature(
  channel: ChannelConfig,
  header: string,
  received: string | undefined,
  expected: string,
  mismatch = 'does not match the body',
): void {
  if (!received)
    throw new SignatureError(`Signature missing on channel "${channel.id}": ${header} header is required`, {
      channel: channel.id,
      stage: 'adapter',
    });
  if (!safeEqual(received, expected))
    throw new SignatureError(`Signature mismatch on channel "${channel.id}": ${header} ${mismatch}`, {
      channel: channel.id,
      stage: 'adapter',
    });
}

const SECONDS = /^\d{1,12}$/;
const MILLIS = /^\d{1,16}$/;

/** How a platform's signed timestamp is checked against the receive time. */
export interface Freshness {
  /** Where the timestamp is, as a message names it: `X-Slack-Request-Timestamp`, `the timestamp query parameter`. */
  field: string;
  /** Whole seconds or milliseconds since 1970. */
  unit: 's' | 'ms';
  toleranceMs: number;
  /** The tolerance as a message names it: `the 5 min Slack allows`. @default `the <n> s allowed` */
  limit?: string;
}

/**
 * Refuse a signed timestamp that is not whole `unit`s (401 `bad_signature`) or is more than
 * `toleranceMs` from `now`, the delivery's receive time, either way (401 `stale_timestamp`).
 * The signature covers the timestamp, so a captured delivery stops verifying once it ages out;
 * inside the tolerance, its platform id is still claimed (a tolerance under half the channel's
 * exact-id window leaves no gap), so a replay is a duplicate.
 */
export function checkFreshness(channel: ChannelConfig, raw: string, now: number, rule: Freshness): void {
  const context = { channel: channel.id, stage: 'adapter' };
  if (!(rule.unit === 's' ? SECONDS : MILLIS).test(raw)) {
    throw new SignatureError(
      `Signature mismatch on channel "${channel.id}": ${rule.field} must be ${rule.unit === 's' ? 'seconds' : 'milliseconds'} since 1970, got "${raw.slice(0, 32)}"`,
      context,
    );
  }
  const drift = now - Number(raw) * (rule.unit === 's' ? 1000 : 1);
  if (Math.abs(drift) <= rule.toleranceMs) return;
  const off = `${Math.round(Math.abs(drift) / 1000)} s ${drift > 0 ? 'old' : "ahead of this host's clock"}`;
  throw new StaleTimestampError(
    `Stale timestamp on channel "${channel.id}": ${rule.field} is ${off}, more than ${rule.limit ?? `the ${rule.toleranceMs / 1000} s allowed`} (a replayed request, or this host's clock is off)`,
    context,
  );
}
