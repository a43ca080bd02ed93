import type { Segment } from '../events/inbound.js';

const segmentTypes = new Set<Segment['type']>(['text', 'at', 'face', 'image', 'flash', 'record', 'video', 'file', 'reply', 'json', 'xml', 'ark']);

/** OneBot v11 CQ-code escapes: `&amp;` `&#91;` `&#93;` everywhere, plus `&#44;` inside codes. */
function unescape(text: string): string {
  return text.replace(/&#91;/g, '[').replace(/&#93;/g, ']').replace(/&#44;/g, ',').replace(/&amp;/g, '&');
}

/** A segment type we model, or `other` (keeping the original type in `data.type`). */
export function segmentOf(type: string, data: Record<string, string>): Segment {
  return segmentTypes.has(type as Segment['type'])
    ? { type: type as Segment['type'], data }
    : { type: 'other', data: { ...data, type } };
}

/** Parse a CQ-code string (`hi[CQ:at,qq=10001][CQ:image,file=a.png,url=...]`) into segments. */
export function parseCqString(message: string): Segment[] {
  const segments: Segment[] = [];
  const code = /\[CQ:([A-Za-z0-9_.-]+)((?:,[^,\]=]+=[^,\]]*)*)\]/g;
  let at = 0;
  for (let match = code.exec(message); match; match = code.exec(message)) {
    if (match.index > at) segments.push({ type: 'text', data: { text: unescape(message.slice(at, match.index)) } });
    const data: Record<string, string> = {};
    for (const pair of (match[2] ?? '').split(',').slice(1)) {
      const eq = pair.indexOf('=');
      data[pair.slice(0, eq)] = unescape(pair.slice(eq + 1));
    }
    segments.push(segmentOf(match[1] as string, data));
    at = match.index + match[0].length;
  }
  if (at < message.length) segments.push({ type: 'text', data: { text: unescape(message.slice(at)) } });
  return segments;
}
