import { md5InName } from '../../core/digest.js';
import { isForward } from '../kit/segments.js';
import type { MediaRef, MediaType, Segment } from '../../events/inbound.js';
import { parseCqString, segmentOf } from './cq.js';

/** A OneBot id or text field as a string: implementations send ids as numbers or strings. */
export const str = (value: unknown): string | undefined =>
  typeof value === 'string'
    ? value
    : (typeof value === 'number' && Number.isFinite(value)) || typeof value === 'bigint'
      ? String(value)
      : undefined;

export function segmentsOf(message: unknown): Segment[] {
  if (typeof message === 'string') return parseCqString(message);
  if (!Array.isArray(message)) return [];
  const segments: Segment[] = [];
  for (const item of message) {
    if (typeof item !== 'object' || item === null) continue;
    const { type, data } = item as { type?: unknown; data?: unknown };
    if (typeof type !== 'string') continue;
    const fields: Record<string, string> = {};
    if (typeof data === 'object' && data !== null) {
      for (const [key, value] of Object.entries(data)) {
        const text = str(value) ?? (typeof value === 'object' && value !== null ? JSON.stringify(value) : undefined);
        if (text !== undefined) fields[key] = text;
      }
    }
    segments.push(segmentOf(type, fields));
  }
  return segments;
}

const mediaTypes: Partial<Record<Segment['type'], MediaType>> = {
  image: 'image',
  flash: 'image',
  record: 'audio',
  video: 'video',
  file: 'document',
};

/** Attachments of image/flash/record/video/file segments that carry a downloadable URL. */
export function mediaOf(segments: readonly Segment[]): MediaRef[] {
  const media: MediaRef[] = [];
  for (const segment of segments) {
    const type = mediaTypes[segment.type];
    if (!type) continue;
    const { url, file } = segment.data;
    const href = url && /^https?:/i.test(url) ? url : file && /^https?:/i.test(file) ? file : undefined;
    if (!href) continue;
    const hash = segment.data.md5 ?? segment.data.sha1 ?? md5InName(file);
    media.push({
      url: href,
      type,
      ...(hash ? { hash } : {}),
      ...(file && !/^https?:/i.test(file) ? { fileName: file } : {}),
    });
  }
  return media;
}

export { contentOf } from '../kit/segments.js';

/**
 * A message's ids as this bot sees them: its message_id, and the id in its reply segment. The
 * OneBot v11 reply segment carries only the quoted id (github.com/botuniverse/onebot-11
 * message/segment.md#回复): its author and text are not in the event, so `reply_to_sender`
 * and `reply_to_bot` stay unknown here (a `message_sent` the bot reported tells who wrote it).
 */
export function messageFields(messageId: string | undefined, segments: readonly Segment[]): Record<string, string> {
  const fields: Record<string, string> = {};
  if (messageId) fields.message_id = messageId;
  const quoted = segments.find((segment) => segment.type === 'reply')?.data.id;
  if (quoted) fields.reply_to = quoted;
  // A merged forward arrives as a `forward` segment holding only its id; get_forward_msg reads
  // its nodes (github.com/botuniverse/onebot-11 message/segment.md#合并转发).
  const forward = segments.find(isForward)?.data.id;
  if (forward) {
    fields.forwarded = 'true';
    fields.forward_id = forward;
  }
  return fields;
}
