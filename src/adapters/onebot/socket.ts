import { IntakeError, RequestError } from '../../core/errors.js';
import type { SocketFrame, SocketPeer } from '../../events/connection.js';
import type { RawDelivery } from '../../events/transport.js';
import { safeEqual } from '../../core/signing.js';
import type { AdapterChannel } from '../kit/descriptor.js';
import { headerOf } from '../kit/types.js';

/** OneBot v11 over WebSocket: the reverse handshake (the bot connects to us) and the frames a connection keeps. */

const ROLES = new Map([
  ['universal', 'Universal'],
  ['event', 'Event'],
  ['api', 'API'],
]);

/** Frames larger than this are never meta events: they go straight to the pipeline and its limits. */
const META_FRAME_MAX = 64 * 1024;
/** The words a meta event or an action's answer spells, as bytes: a string needle is encoded again on every search. */
const META_EVENT = Buffer.from('meta_event');
const ECHO = Buffer.from('"echo"');

/**
 * Authenticate a reverse-WebSocket upgrade: the token from `Authorization: Bearer <token>` or
 * `?access_token=`, the bot from `X-Self-ID`, the role from `X-Client-Role` (any case; NapCat
 * sends it in lower case). Without an access token (`"verify": false`) any token is accepted,
 * NapCat's empty `Bearer ` included.
 */
export function acceptOneBotSocket(
  channel: AdapterChannel,
  accessToken: string | undefined,
  handshake: RawDelivery,
): SocketPeer {
  const context = { channel: channel.id, stage: 'adapter' };
  if (accessToken !== undefined) {
    const authorization = headerOf(handshake, 'authorization');
    const bearer = authorization === undefined ? undefined : tokenOf(authorization);
    const token = bearer || handshake.query.get('access_token') || undefined;
    if (token === undefined) {
      throw new IntakeError(
        'token_missing',
        401,
        `Access token missing on channel "${channel.id}": send Authorization: Bearer <accessToken> or ?access_token=`,
        context,
      );
    }
    if (!safeEqual(token, accessToken))
      throw new IntakeError(
        'token_mismatch',
        403,
        `Access token wrong on channel "${channel.id}": it does not match the channel's accessToken`,
        context,
      );
  }
  const selfId = headerOf(handshake, 'x-self-id')?.trim();
  if (!selfId || !/^\d{1,20}$/.test(selfId)) {
    throw new RequestError(
      'self_id_missing',
      400,
      `X-Self-ID header ${selfId ? "must be the bot's QQ number" : 'is required'} on channel "${channel.id}": OneBot sends the bot's account id in it`,
      context,
    );
  }
  const asked = headerOf(handshake, 'x-client-role')?.trim() ?? 'Universal';
  const role = ROLES.get(asked.toLowerCase());
  if (!role)
    throw new RequestError(
      'bad_role',
      400,
      `X-Client-Role must be Universal, Event or API on channel "${channel.id}", got "${asked.slice(0, 40)}"`,
      context,
    );
  return { botId: selfId, role };
}

/**
 * The token of an `Authorization` value, `Bearer <token>` or `Token <token>` (any case, white
 * space around it dropped; a token split by a line break is none). Read by trimming, not by a
 * pattern such as `^\s*Bearer\s*(.*?)\s*$`, which tries the trailing white space at every
 * character: a run of spaces inside one 16 KiB header (Node's default limit) held the event
 * loop about 0.2 s, before any token was checked, and longer headers quadratically more.
 */
function tokenOf(authorization: string): string | undefined {
  const value = authorization.trim();
  const scheme = /^(?:bearer|token)/i.exec(value);
  if (!scheme) return undefined;
  const token = value.slice(scheme[0].length).trimStart();
  return /[\n\r\u2028\u2029]/.test(token) ? undefined : token;
}

/**
 * A frame the connection keeps for itself: a meta event (lifecycle, heartbeat) or the answer to
 * an action (no `post_type`, an `echo`). Undefined for anything else, which the pipeline reads
 * and judges. Most frames are messages, told apart here without parsing them.
 */
export function oneBotFrame(frame: Buffer): SocketFrame | undefined {
  if (frame.length > META_FRAME_MAX || (!frame.includes(META_EVENT) && !frame.includes(ECHO))) return undefined;
  const body = JSON.parse(frame.toString('utf8')) as unknown;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const event = body as Record<string, unknown>;
  if (event.post_type === 'meta_event') {
    const heartbeat = event.meta_event_type === 'heartbeat';
    const interval = typeof event.interval === 'number' && Number.isFinite(event.interval) ? event.interval : undefined;
    const botId =
      typeof event.self_id === 'number' || typeof event.self_id === 'string' ? String(event.self_id) : undefined;
    return {
      kind: 'meta',
      heartbeat,
      ...(heartbeat && interval !== undefined ? { intervalMs: heartbeatMsOf(interval) } : {}),
      ...(botId ? { botId } : {}),
    };
  }
  if (event.post_type === undefined && event.echo !== undefined)
    return { kind: 'response', echo: String(event.echo), body };
  return undefined;
}

/** The bot's account id in the answer to `get_login_info` (`{data: {user_id}}`), which a forward socket asks first. */
export function loginIdOf(answer: unknown): string | undefined {
  const data = typeof answer === 'object' && answer !== null ? (answer as { data?: unknown }).data : undefined;
  const id = typeof data === 'object' && data !== null ? (data as { user_id?: unknown }).user_id : undefined;
  return typeof id === 'number' || (typeof id === 'string' && /^\d{1,20}$/.test(id)) ? String(id) : undefined;
}

/**
 * A heartbeat interval as a bot reports it, in ms. OneBot says ms; Lagrange sends seconds: an
 * interval under 1000 is taken as seconds.
 */
export function heartbeatMsOf(interval: number): number {
  return interval > 0 && interval < 1000 ? interval * 1000 : interval;
}
