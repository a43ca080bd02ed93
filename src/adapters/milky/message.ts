import type { MediaRef, MediaType, Segment } from '../../events/inbound.js';
import { contentOf, isForward } from '../kit/segments.js';
import { QUOTE_TEXT_MAX } from '../kit/reply.js';
import { own, type Json } from '../kit/shape.js';

/**
 * Milky's incoming segments (SaltifyDev/milky, `IncomingSegment` of @saltify/milky-types) as the
 * segments OneBot gives for the same content: a Milky bot and a OneBot bot in one QQ group then
 * give one content signature (src/correlate/signature.ts) and one output.
 */

/** A Milky id or text field as a string: QQ numbers and sequences come as JSON numbers. */
export const str = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : typeof value === 'number' && Number.isFinite(value) ? String(value) : undefined;

const objectOf = (value: unknown): Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};

/** Only the fields that are there: an absent one is no `"undefined"` string. */
function fieldsOf(entries: Record<string, unknown>): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [key, value] of Object.entries(entries)) {
    const text = str(value);
    if (text !== undefined) fields[key] = text;
  }
  return fields;
}

/**
 * One Milky segment as OneBot's: `mention` is `at` (`qq`), `mention_all` is `at` `qq=all`,
 * `face` keeps its id in `id`, a reply quotes its `message_seq`, media keep their temporary URL
 * in `url` and Milky's resource id in `file`, a forward is OneBot's `forward` (`other`), a light
 * app its `json` card; anything else stays `other` with its type.
 */
function segmentOf(type: string, data: Json): Segment {
  switch (type) {
    case 'text':
      return { type: 'text', data: fieldsOf({ text: own(data, 'text') }) };
    case 'mention':
      return { type: 'at', data: fieldsOf({ qq: own(data, 'user_id'), name: own(data, 'name') }) };
    case 'mention_all':
      return { type: 'at', data: { qq: 'all' } };
    case 'face':
      return { type: 'face', data: fieldsOf({ id: own(data, 'face_id') }) };
    case 'reply':
      return {
        type: 'reply',
        data: fieldsOf({ id: own(data, 'message_seq'), sender_id: own(data, 'sender_id'), time: own(data, 'time') }),
      };
    case 'image':
    case 'record':
    case 'video':
      return {
        type,
        data: fieldsOf({
          url: own(data, 'temp_url'),
          file: own(data, 'resource_id'),
          summary: own(data, 'summary'),
          sub_type: own(data, 'sub_type'),
        }),
      };
    case 'file':
      return {
        type: 'file',
        data: fieldsOf({
          file_id: own(data, 'file_id'),
          name: own(data, 'file_name'),
          file_size: own(data, 'file_size'),
        }),
      };
    case 'forward':
      return { type: 'other', data: fieldsOf({ type: 'forward', id: own(data, 'forward_id') }) };
    case 'light_app':
      return { type: 'json', data: fieldsOf({ data: own(data, 'json_payload') }) };
    case 'xml':
      return { type: 'xml', data: fieldsOf({ data: own(data, 'xml_payload') }) };
    default:
      return { type: 'other', data: { type } };
  }
}

/** The segments of a message; entries that are no `{type, data}` are skipped. */
export function segmentsOf(segments: readonly unknown[]): Segment[] {
  const out: Segment[] = [];
  for (const item of segments) {
    const entry = objectOf(item);
    const type = own(entry, 'type');
    if (typeof type === 'string') out.push(segmentOf(type, objectOf(own(entry, 'data'))));
  }
  return out;
}

const mediaTypes: Partial<Record<Segment['type'], MediaType>> = { image: 'image', record: 'audio', video: 'video' };

/**
 * Attachments with a temporary URL (`temp_url`, valid for a while after the event). A file
 * segment names only a `file_id`, which a download-URL API call would exchange: not fetched.
 */
export function mediaOf(segments: readonly Segment[]): MediaRef[] {
  const media: MediaRef[] = [];
  for (const segment of segments) {
    const type = mediaTypes[segment.type];
    const url = segment.data.url;
    if (type && url && /^https?:/i.test(url)) media.push({ url, type });
  }
  return media;
}

export { contentOf } from '../kit/segments.js';

/**
 * A message's ids: its `message_seq`, the quoted message (its platform id, as that message's own
 * event has it, and its author, which Milky's reply segment names), and a forward's id.
 */
export function messageFields(
  seq: string,
  quotedId: (seq: string) => string,
  segments: readonly Segment[],
  raw: readonly unknown[],
): Record<string, string> {
  const fields: Record<string, string> = { message_seq: seq };
  const reply = segments.find((segment) => segment.type === 'reply');
  if (reply?.data.id) {
    fields.reply_to = quotedId(reply.data.id);
    if (reply.data.sender_id) fields.reply_to_sender = reply.data.sender_id;
    const quoted = raw.map(objectOf).find((entry) => own(entry, 'type') === 'reply');
    const inner = own(objectOf(quoted && own(quoted, 'data')), 'segments');
    const text = Array.isArray(inner) ? contentOf(segmentsOf(inner)) : '';
    if (text) fields.reply_to_text = text.slice(0, QUOTE_TEXT_MAX);
  }
  const forward = segments.find(isForward)?.data.id;
  if (forward) {
    fields.forwarded = 'true';
    fields.forward_id = forward;
  }
  return fields;
}
