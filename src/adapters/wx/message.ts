import { SignatureError, type RequestError } from '../../core/errors.js';
import type { InboundEvent, MediaRef, Segment } from '../../events/inbound.js';
import type { RawDelivery } from '../../events/transport.js';
import type { AdapterChannel } from '../kit/descriptor.js';
import { checkFreshness, type Freshness } from '../kit/types.js';
import type { EventParts } from '../kit/event.js';
import { own, PayloadReader, type Json } from '../kit/shape.js';
import { WxCryptoError, type WxCrypto } from './crypto.js';

// What WeChat Official Accounts and WeCom apps share once a callback is verified and decrypted:
// the message XML (Receiving_standard_messages; WeCom 90239/90240) and the query checks.

/** The events of the event push that become notices; every other `Event` is acknowledged and ignored. */
const NOTICES = new Set(['subscribe', 'unsubscribe', 'click', 'view', 'scan']);

/** What a platform's normalize needs of its channel. */
export interface WxSource {
  buildEvent(parts: EventParts): InboundEvent;
  fail(problem: string): RequestError;
  botId: string;
  /** WeCom: a `ChatId` puts the message in that group chat (`<namespace>:group:<ChatId>`). */
  groupChats: boolean;
}

/** `<Label> (<x>, <y>)` of a location message. */
function locationText(read: PayloadReader, xml: Json): string {
  const x = read.optText(own(xml, 'Location_X'), 'Location_X') ?? '?';
  const y = read.optText(own(xml, 'Location_Y'), 'Location_Y') ?? '?';
  const label = read.optText(own(xml, 'Label'), 'Label');
  return label ? `location: ${label} (${x}, ${y})` : `location: (${x}, ${y})`;
}

/** Media, segments and text of one message by its MsgType; undefined for a type we do not read. */
function contentOf(
  read: PayloadReader,
  xml: Json,
  type: string,
  fields: Record<string, string>,
  fail: (problem: string) => RequestError,
): { text: string; media: MediaRef[]; segments?: Segment[] } | undefined {
  const opt = (key: string) => read.optText(own(xml, key), key);
  switch (type) {
    case 'text':
      return { text: opt('Content') ?? '', media: [] };
    case 'image': {
      const url = opt('PicUrl');
      const mediaId = opt('MediaId');
      const direct = url && /^https?:\/\//i.test(url) ? url : undefined;
      if (!direct && !mediaId) throw fail('an image message needs PicUrl (an http(s) URL) or MediaId');
      const data: Record<string, string> = {};
      if (direct) data.url = direct;
      if (mediaId) data.file = mediaId;
      return {
        text: '',
        media: [{ ...(direct ? { url: direct } : {}), ...(mediaId ? { ref: mediaId } : {}), type: 'image' }],
        segments: [{ type: 'image', data }],
      };
    }
    case 'voice': {
      const mediaId = read.text(own(xml, 'MediaId'), 'MediaId');
      const format = opt('Format')?.toLowerCase();
      if (format) fields.format = format;
      const text = opt('Recognition')?.trim() ?? '';
      const segments: Segment[] = [{ type: 'record', data: { file: mediaId } }];
      if (text) segments.push({ type: 'text', data: { text } });
      return {
        text,
        media: [{ ref: mediaId, type: 'audio', ...(format === 'amr' ? { mimeType: 'audio/amr' } : {}) }],
        segments,
      };
    }
    case 'video':
    case 'shortvideo': {
      const mediaId = read.text(own(xml, 'MediaId'), 'MediaId');
      const thumb = opt('ThumbMediaId');
      if (thumb) fields.thumb_media_id = thumb;
      return {
        text: '',
        media: [{ ref: mediaId, type: 'video' }],
        segments: [{ type: 'video', data: { file: mediaId } }],
      };
    }
    case 'location':
      return { text: locationText(read, xml), media: [] };
    case 'link': {
      const title = opt('Title') ?? '';
      const url = opt('Url') ?? '';
      return { text: [title, url].filter(Boolean).join('\n'), media: [] };
    }
    default:
      return undefined;
  }
}

/**
 * The events of one decrypted callback message: a message (MsgId its platform id), a notice
 * for subscribe/unsubscribe/CLICK/VIEW/SCAN (`FromUserName:CreateTime` its platform id, as the
 * platforms dedup events), or nothing (another MsgType or Event, counted ignored).
 */
export function wxEvents(xml: Json, source: WxSource, now: number): { events: InboundEvent[]; ignored?: number } {
  const read = new PayloadReader(source.fail);
  const from = read.text(own(xml, 'FromUserName'), 'FromUserName');
  const type = read.text(own(xml, 'MsgType'), 'MsgType').toLowerCase();
  const createTime = read.text(own(xml, 'CreateTime'), 'CreateTime');
  const timestamp = read.timestamp(createTime, 'CreateTime', 's', now);
  const chatId = source.groupChats ? read.optText(own(xml, 'ChatId'), 'ChatId') : undefined;
  const conversation = chatId ? { type: 'group' as const, id: chatId } : { type: 'private' as const, id: from };
  const fields: Record<string, string> = { msg_type: type };
  const to = read.optText(own(xml, 'ToUserName'), 'ToUserName');
  if (to) fields.to_user = to;
  const agentId = read.optText(own(xml, 'AgentID'), 'AgentID');
  if (agentId) fields.agent_id = agentId;
  if (chatId) fields.chat_id = chatId;
  if (type === 'event') {
    const event = read.text(own(xml, 'Event'), 'Event');
    const name = event.toLowerCase();
    if (!NOTICES.has(name)) return { events: [], ignored: 1 };
    fields.event = event;
    const key = read.optText(own(xml, 'EventKey'), 'EventKey');
    if (key) fields.event_key = key;
    const ticket = read.optText(own(xml, 'Ticket'), 'Ticket');
    if (ticket) fields.ticket = ticket;
    return {
      events: [
        source.buildEvent({
          kind: 'notice',
          detail: name,
          botId: source.botId,
          conversation,
          sender: { id: from },
          platformId: `${from}:${createTime}`,
          text: key ? `${name}: ${key}` : name,
          fields,
          timestamp,
          raw: xml,
        }),
      ],
    };
  }
  // The message XML names no mentions and quotes no message (Receiving_standard_messages;
  // WeCom 90239): an @ of a WeCom app in a group chat is only text, and nothing is a reply.
  const msgId = read.text(own(xml, 'MsgId'), 'MsgId');
  fields.msg_id = msgId;
  const content = contentOf(read, xml, type, fields, source.fail);
  if (!content) return { events: [], ignored: 1 };
  return {
    events: [
      source.buildEvent({
        kind: 'message',
        detail: conversation.type,
        subType: type,
        botId: source.botId,
        conversation,
        sender: { id: from },
        platformId: msgId,
        text: content.text,
        segments: content.segments,
        media: content.media,
        fields,
        timestamp,
        raw: xml,
      }),
    ],
  };
}

/** What the query checks of a channel need. */
export interface WxQueryCheck {
  channel: AdapterChannel;
  /** How the signed `timestamp` is held to the clock (`timestampToleranceSec`; 0: any timestamp). */
  freshness: Freshness;
  platform: string;
}

/** The query checks of a channel whose `timestampToleranceSec` is `toleranceSec`. */
export function wxQueryCheck(channel: AdapterChannel, toleranceSec: number, platform: string): WxQueryCheck {
  const freshness: Freshness = {
    field: 'the timestamp query parameter',
    unit: 's',
    // 0 accepts any time: past every timestamp of whole seconds (12 digits).
    toleranceMs: toleranceSec === 0 ? Infinity : toleranceSec * 1000,
    limit: `the ${toleranceSec} s of channels[${channel.index}].timestampToleranceSec`,
  };
  return { channel, freshness, platform };
}

/** The query parameter `name`, or the 401 that names it. */
export function queryOf(delivery: RawDelivery, name: string, check: WxQueryCheck): string {
  const value = delivery.query.get(name);
  if (!value)
    throw new SignatureError(
      `Signature missing on channel "${check.channel.id}": the ${name} query parameter is required (${check.platform} signs the URL)`,
      { channel: check.channel.id, stage: 'adapter' },
    );
  return value;
}

/** The `timestamp` parameter, refused when stale: the signature covers it, so a replay ages out. */
export function freshTimestamp(delivery: RawDelivery, check: WxQueryCheck): string {
  const timestamp = queryOf(delivery, 'timestamp', check);
  checkFreshness(check.channel, timestamp, delivery.now, check.freshness);
  return timestamp;
}

/** Decrypt a ciphertext of the channel, or the 401 that says why not and which settings to check. */
export function openOrRefuse(crypto: WxCrypto, encrypt: string, check: WxQueryCheck, settings: string): Buffer {
  try {
    return crypto.open(encrypt);
  } catch (error) {
    if (!(error instanceof WxCryptoError)) throw error;
    throw new SignatureError(
      `Decryption failed on channel "${check.channel.id}": the ciphertext does not open, ${error.message}; check ${settings}`,
      { channel: check.channel.id, stage: 'adapter' },
    );
  }
}
