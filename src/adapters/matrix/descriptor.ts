import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { IntakeError, MediaError, RequestError, UnavailableError } from '../../core/errors.js';
import { safeEqual } from '../../core/signing.js';
import type { InboundEvent } from '../../events/inbound.js';
import type { ReplyParts, ReplyTarget } from '../../events/reply.js';
import type { PlatformReply, RawDelivery } from '../../events/transport.js';
import { defineAdapter, type AdapterChannel } from '../kit/descriptor.js';
import { eventBuilder } from '../kit/event.js';
import { quoteOf } from '../kit/reply.js';
import { optionalText, requiredText } from '../kit/settings.js';
import { own, PayloadReader } from '../kit/shape.js';
import {
  headerOf,
  shapeError,
  verifiedSecret,
  type ActionRequest,
  type Adapter,
  type Normalized,
  type TypingSignal,
} from '../kit/types.js';
import { roomEvent } from './message.js';

const settings = z.strictObject({
  /** The registration's `hs_token`: the homeserver sends it with every transaction. */
  hsToken: optionalText(),
  /** The registration's `as_token`: our requests to the homeserver (media downloads) carry it. */
  asToken: requiredText("the registration's as_token, to download media"),
  /** The homeserver's client-server API base (`https://matrix.example.org`). */
  homeserverUrl: requiredText('the homeserver base URL, https://matrix.example.org').transform((url) =>
    url.replace(/\/$/, ''),
  ),
  /** The appservice bot's user id (`@bot:example.org`, the registration's `sender_localpart`). */
  userId: requiredText('the appservice bot user id, @<sender_localpart>:<server>'),
});

/** Matrix application service (spec: Application Service API). */
export const matrix = defineAdapter({
  name: 'matrix',
  namespace: 'matrix',
  secret: { setting: 'hsToken', required: true, why: "checks the homeserver's hs_token with it" },
  settings,
  // The homeserver retries a transaction with the same txnId until it is answered (spec,
  // Application Service API "Pushing events"); Synapse waits 2 s, doubling up to 512 s between
  // attempts (synapse/appservice/scheduler.py, `_Recoverer`). An hour covers a transaction
  // recorded whose answer was lost, retried at the longest wait several times over.
  retryHorizonMs: 3_600_000,
  create: matrixAdapter,
});

/** Where the homeserver PUTs transactions under the channel's webhook URL (current and legacy routes). */
export const TRANSACTION_PATHS = ['/_matrix/app/v1/transactions/', '/transactions/'] as const;

/**
 * Matrix Application Service API: the homeserver PUTs each transaction `{events, ephemeral?}`
 * to `/_matrix/app/v1/transactions/<txnId>` with `Authorization: Bearer <hs_token>` (legacy
 * servers: `?access_token=`), and retries it with the same txnId until it is answered `200 {}`.
 * The txnId is the delivery id: a transaction seen before records nothing, even when its body
 * differs (the homeserver must not change it). Each room event's platform id is its `event_id`.
 * A delivery with no txnId (the library's `intake.ingest`, a POST to the webhook URL itself) is
 * verified and taken the same way, its events deduplicated by `event_id` alone.
 */
export function matrixAdapter(channel: AdapterChannel, options: z.output<typeof settings>): Adapter {
  const hsToken = verifiedSecret(channel, options.hsToken);
  const { asToken, homeserverUrl, userId } = options;
  const namespace = channel.namespace;
  const buildEvent = eventBuilder({ channel: channel.id, adapter: 'matrix', namespace, idPrefix: 'mx' });
  const fail = (problem: string) => shapeError(channel, 'a Matrix transaction', problem);
  const context = { channel: channel.id, stage: 'adapter' };

  return {
    name: 'matrix',
    channel: channel.id,
    namespace,
    botIds: [userId],
    webhookPath: { method: 'PUT', prefixes: TRANSACTION_PATHS },
    actionApi: {
      url: homeserverUrl,
      headers: { authorization: `Bearer ${asToken}` },
      route: (action, params) => sendRequest(channel, action, params),
    },
    sendsMessage: (action) => action === 'send',
    sentByAction: (action, answer) =>
      action === 'send' && typeof answer === 'object' && answer !== null && 'event_id' in answer
        ? String((answer as { event_id: unknown }).event_id)
        : undefined,

    verify(delivery) {
      if (!hsToken) return;
      const header = headerOf(delivery, 'authorization');
      const bearer = header?.startsWith('Bearer ') ? header.slice('Bearer '.length) : undefined;
      const query = delivery.query.get('access_token') ?? undefined;
      // Spec: a server may send both (legacy and current); they must then match.
      if (bearer !== undefined && query !== undefined && bearer !== query)
        throw new IntakeError(
          'token_mismatch',
          403,
          `Token mismatch on channel "${channel.id}": Authorization and ?access_token= differ`,
          context,
        );
      const token = bearer ?? query;
      if (token === undefined)
        throw new IntakeError(
          'token_missing',
          401,
          `Token missing on channel "${channel.id}": the homeserver sends Authorization: Bearer <hs_token>`,
          context,
        );
      if (!safeEqual(token, hsToken))
        throw new IntakeError(
          'token_mismatch',
          403,
          `Token wrong on channel "${channel.id}": it is not the registration's hs_token (the channel's hsToken)`,
          context,
        );
    },

    deliveryId: transactionOf,
    deliveryClaimsAll: true,

    normalize(body, delivery): Normalized {
      const read = new PayloadReader(fail);
      const payload = read.object(body, 'the body', 'a transaction {events, ephemeral?}');
      const events: InboundEvent[] = [];
      let ignored = 0;
      read.array(own(payload, 'events'), 'events').forEach((item, i) => {
        const at = `events[${i}]`;
        const event = roomEvent(read.object(item, at, 'a room event {type, event_id, sender, room_id, ...}'), {
          read,
          at,
          userId,
          now: delivery.now,
          buildEvent,
        });
        if (event) events.push(event);
        else ignored++;
      });
      // v1.13 names it `ephemeral`; Synapse's MSC2409 flag, `de.sorunome.msc2409.ephemeral`.
      const ephemeralKey = own(payload, 'ephemeral') === undefined ? 'de.sorunome.msc2409.ephemeral' : 'ephemeral';
      const typing = typingOf(read, read.optArray(own(payload, ephemeralKey), ephemeralKey), ephemeralKey);
      return {
        events,
        reply: TRANSACTION_DONE,
        ...(ignored > 0 ? { ignored } : {}),
        ...(typing.length > 0 ? { typing } : {}),
      };

      function typingOf(reader: PayloadReader, items: readonly unknown[], key: string): TypingSignal[] {
        const signals: TypingSignal[] = [];
        items.forEach((item, i) => {
          const at = `${key}[${i}]`;
          const edu = reader.object(item, at, 'an ephemeral event {type, room_id?, content}');
          if (own(edu, 'type') !== 'm.typing') return;
          const roomId = reader.text(own(edu, 'room_id'), `${at}.room_id`);
          const content = reader.object(own(edu, 'content'), `${at}.content`, 'an object {user_ids}');
          // The whole list of current typers (spec m.typing), not a change: each holds its buffer.
          reader.optArray(own(content, 'user_ids'), `${at}.content.user_ids`).forEach((id, j) => {
            const senderId = reader.text(id, `${at}.content.user_ids[${j}]`);
            if (senderId !== userId) signals.push({ sessionKey: `${namespace}:group:${roomId}`, senderId });
          });
        });
        return signals;
      }
    },

    refusal: matrixRefusal,

    replyTo: matrixReply,

    async resolveMedia(ref) {
      const match = /^mxc:\/\/([^/]+)\/([^/?#]+)$/.exec(ref.ref ?? '');
      if (!match)
        throw new MediaError('bad_url', `Not a Matrix content URI (mxc://<server>/<id>): "${ref.ref ?? ''}"`, false);
      const [, server, mediaId] = match as unknown as [string, string, string];
      // Authenticated media (spec v1.11, `authed-content-repo.yaml`): the as_token is the bot's token.
      return {
        url: `${homeserverUrl}/_matrix/client/v1/media/download/${encodeURIComponent(server)}/${encodeURIComponent(mediaId)}`,
        headers: { authorization: `Bearer ${asToken}` },
      };
    },
  };
}

/**
 * `send` `{room_id, body, msgtype?, reply_to?, txn_id?}`: `PUT /_matrix/client/v3/rooms/<room_id>/
 * send/m.room.message/<txnId>` as the bot (spec, Client-Server API). The homeserver keeps one
 * event per access token and txnId, so a caller retrying a send passes the same `txn_id`.
 */
export function sendRequest(channel: AdapterChannel, action: string, params: Record<string, unknown>): ActionRequest {
  const fail = (problem: string) =>
    new RequestError('bad_action', 400, `Action "${action}" on channel "${channel.id}": ${problem}`, {
      channel: channel.id,
      stage: 'connections',
    });
  if (action !== 'send') throw fail('the matrix channel takes "send" only');
  const text = (key: string) => {
    const value = own(params, key);
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || value === '') throw fail(`${key} must be a non-empty string`);
    return value;
  };
  const roomId = text('room_id');
  const body = text('body');
  if (!roomId || !body) throw fail('room_id and body are required');
  const replyTo = text('reply_to');
  const content = {
    msgtype: text('msgtype') ?? 'm.text',
    body,
    ...(replyTo ? { 'm.relates_to': { 'm.in_reply_to': { event_id: replyTo } } } : {}),
  };
  const txnId = text('txn_id') ?? `intake-${randomUUID()}`;
  return {
    method: 'PUT',
    path: `/_matrix/client/v3/rooms/${encodeURIComponent(roomId)}/send/m.room.message/${encodeURIComponent(txnId)}`,
    body: content,
  };
}

const TRANSACTION_DONE: PlatformReply = Object.freeze({ status: 200, body: Object.freeze({}) });

/** The txnId of a transaction delivery: the rest of its path after a transaction route. */
export function transactionOf(delivery: RawDelivery): string | undefined {
  const path = delivery.path;
  if (path === undefined) return undefined;
  const prefix = TRANSACTION_PATHS.find((candidate) => path.startsWith(candidate));
  const txnId = prefix === undefined ? '' : path.slice(prefix.length);
  if (txnId === '' || txnId.includes('/')) return undefined;
  try {
    return decodeURIComponent(txnId);
  } catch {
    return undefined;
  }
}

/** A refusal as the Application Service API answers one: `{errcode, error}` (spec "Standard error response"). */
export function matrixRefusal(error: IntakeError): PlatformReply {
  const errcode =
    error.status === 401
      ? 'M_UNAUTHORIZED'
      : error.status === 403
        ? 'M_FORBIDDEN'
        : error.status === 404
          ? 'M_UNRECOGNIZED'
          : error.code === 'bad_json'
            ? 'M_NOT_JSON'
            : error.status === 400
              ? 'M_BAD_JSON'
              : error.status === 413
                ? 'M_TOO_LARGE'
                : 'M_UNKNOWN';
  // A full outbox or a stopping service: the homeserver retries anyway; the header says when.
  const headers = error instanceof UnavailableError ? { 'retry-after': String(error.retryAfterSeconds) } : undefined;
  return { status: error.status, body: { errcode, error: error.message }, ...(headers ? { headers } : {}) };
}

/**
 * `PUT /_matrix/client/v3/rooms/<room_id>/send/m.room.message/<txnId>` into the message's room;
 * a reply names the message (`m.relates_to.m.in_reply_to.event_id`). A reply quotes its parent.
 */
export function matrixReply({ ids, conversation }: ReplyTarget): ReplyParts {
  const quote = quoteOf(ids);
  return {
    params: { room_id: ids.room_id || conversation.id },
    ...(ids.event_id ? { messageId: ids.event_id } : {}),
    ...(quote ? { quote } : {}),
  };
}
