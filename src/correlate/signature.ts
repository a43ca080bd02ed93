import { digest, md5InName } from '../core/digest.js';
import type { InboundEvent, Segment } from '../events/inbound.js';

const TEXT_LIMIT = 256;
/** Query parameters that change per fetch or per bot and say nothing about the content. */
const volatileParams = new Set([
  'rkey',
  'token',
  'expires',
  'expire',
  'sig',
  'signature',
  't',
  'ts',
  'timestamp',
  'x-amz-signature',
  'x-amz-date',
]);

const mediaSegments = { image: 1, flash: 1, record: 1, video: 1, file: 1 };

/** Stable form of a JSON card: keys sorted, layout whitespace gone. */
function canonicalJson(text: string): string {
  const sort = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(sort);
    if (value && typeof value === 'object') {
      return Object.fromEntries(
        Object.keys(value)
          .sort()
          .map((key) => [key, sort((value as Record<string, unknown>)[key])]),
      );
    }
    return value;
  };
  try {
    return JSON.stringify(sort(JSON.parse(text)));
  } catch {
    return text.replace(/\s+/g, '');
  }
}

/** A URL without its volatile query parameters, host lower-cased, parameters sorted. */
export function normalizeUrl(raw: string): string {
  try {
    const url = new URL(raw);
    const kept = [...url.searchParams.entries()]
      .filter(([key]) => !volatileParams.has(key.toLowerCase()))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `${url.host.toLowerCase()}${url.pathname}${kept.length ? '?' + new URLSearchParams(kept).toString() : ''}`;
  } catch {
    return raw;
  }
}

/** An image's identity: a content hash (md5/sha1), else an md5 inside the file name, else its URL. */
function imageIdentity(data: Record<string, string>): string {
  const hashed = data.md5 ?? data.sha1 ?? md5InName(data.file) ?? md5InName(data.url);
  if (hashed) return `h:${hashed.toLowerCase()}`;
  const url = data.url ?? (data.file && /^https?:/i.test(data.file) ? data.file : undefined);
  return url ? `u:${normalizeUrl(url)}` : `f:${data.file ?? ''}`;
}

/**
 * Content signature of a message, per segment: text (adjacent runs merged,
 * whitespace folded and trimmed, first 256 characters), @ target, face id, cards by digest
 * of their canonical form, images by content identity; video, voice and files by type only
 * (implementations share no content id for them); replies are left out.
 */
export function contentSignature(segments: readonly Segment[]): string {
  const parts: string[] = [];
  let text = '';
  const endText = () => {
    const folded = text.replace(/\s+/g, ' ').trim();
    if (folded) parts.push(`t:${Array.from(folded).slice(0, TEXT_LIMIT).join('')}`);
    text = '';
  };
  for (const segment of segments) {
    if (segment.type === 'text') {
      text += segment.data.text ?? '';
      continue;
    }
    if (segment.type === 'reply') continue;
    endText();
    switch (segment.type) {
      case 'at':
        parts.push(`@:${segment.data.qq ?? segment.data.id ?? ''}`);
        break;
      case 'face':
        parts.push(`f:${segment.data.id ?? ''}`);
        break;
      case 'json':
      case 'ark':
        parts.push(`j:${digest(canonicalJson(segment.data.data ?? segment.data.content ?? ''))}`);
        break;
      case 'xml':
        parts.push(`x:${digest((segment.data.data ?? '').replace(/>\s+</g, '><').trim())}`);
        break;
      case 'image':
      case 'flash':
        parts.push(`i:${imageIdentity(segment.data)}`);
        break;
      case 'video':
      case 'record':
      case 'file':
        parts.push(segment.type);
        break;
      default:
        parts.push(`o:${segment.data.type ?? ''}`);
    }
  }
  endText();
  return parts.join('\u0001');
}

/**
 * The correlation key of an event. Messages: `m | type | conversation | sender | content`,
 * sender by id only (nicknames and group cards differ between implementations). Notices and
 * requests: their type, sub-type and the ids that identify them; never a per-bot id (a
 * recall's message_id, a request's flag) and never the time (see Correlator). The namespace
 * comes first: QQ numbers and openids are never bridged.
 */
export function correlationKey(event: InboundEvent): string {
  if (event.kind === 'message') {
    let signature = contentSignature(event.segments);
    // Adapters other than OneBot carry attachments beside the segments, not in them.
    if (!event.segments.some((segment) => segment.type in mediaSegments)) {
      for (const media of event.media)
        signature += `\u0001i:${media.hash ?? (media.url ? normalizeUrl(media.url) : (media.ref ?? ''))}`;
    }
    return `m|${event.namespace}|${event.conversation.type}|${event.conversation.id}|${event.sender.id}|${digest(signature)}`;
  }
  const f = event.fields ?? {};
  return [
    event.kind === 'notice' ? 'n' : 'r',
    event.namespace,
    event.detail ?? '',
    event.subType ?? '',
    f.group_id ?? '',
    f.user_id ?? '',
    f.operator_id ?? '',
    f.target_id ?? '',
  ].join('|');
}
