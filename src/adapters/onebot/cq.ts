import type { Segment } from '../../events/inbound.js';

const segmentTypes = new Set<Segment['type']>([
  'text',
  'at',
  'face',
  'image',
  'flash',
  'record',
  'video',
  'file',
  'reply',
  'json',
  'xml',
  'ark',
]);

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

const OPEN = '[CQ:';
const COMMA = 0x2c;
const EQUALS = 0x3d;

/** A character of a CQ code's type: `[A-Za-z0-9_.-]`. */
function isTypeChar(c: number): boolean {
  return (
    (c >= 0x61 && c <= 0x7a) ||
    (c >= 0x41 && c <= 0x5a) ||
    (c >= 0x30 && c <= 0x39) ||
    c === 0x5f ||
    c === 0x2e ||
    c === 0x2d
  );
}

/**
 * Parse a CQ-code string (`hi[CQ:at,qq=10001][CQ:image,file=a.png,url=...]`) into segments.
 *
 * A code is `[CQ:<type>` (`[A-Za-z0-9_.-]+`), then `,<key>=<value>` pairs (a key is not empty
 * and holds no `,` `]` `=`; a value holds no `,` `]`), then `]`; anything else, an unclosed
 * code included, stays text. One pass: a regex for that grammar restarts at every `[CQ:` that
 * never closes and reads on to the end of the message each time (a 1 MiB message of them held
 * the event loop for minutes), so the codes are found by scanning instead.
 */
export function parseCqString(message: string): Segment[] {
  const segments: Segment[] = [];
  const text = (from: number, to: number) => {
    if (to > from) segments.push({ type: 'text', data: { text: unescape(message.slice(from, to)) } });
  };
  let copied = 0;
  let from = 0;
  for (;;) {
    const start = message.indexOf(OPEN, from);
    if (start < 0) break;
    // No code holds a `]`, so every code that opens before this one closes on it, or not at all.
    const close = message.indexOf(']', start);
    if (close < 0) break;
    const code = firstCode(message, start, close);
    if (code) {
      text(copied, code.at);
      const data: Record<string, string> = {};
      for (const pair of message.slice(code.typeEnd, close).split(',').slice(1)) {
        const eq = pair.indexOf('=');
        data[pair.slice(0, eq)] = unescape(pair.slice(eq + 1));
      }
      segments.push(segmentOf(message.slice(code.at + OPEN.length, code.typeEnd), data));
      copied = close + 1;
    }
    from = close + 1;
  }
  text(copied, message.length);
  return segments;
}

/**
 * The first `[CQ:` in `[start, close)` that makes a whole code closing at `close`: where its
 * type ends and its pairs begin. A code's pairs are the `,`-separated pieces from the comma
 * after its type to `close`, so every code here ends with the same pieces: one pass finds the
 * last piece that is no `key=value` (`lastBad`, the comma before it), and a code is whole when
 * its pairs begin after it.
 */
function firstCode(message: string, start: number, close: number): { at: number; typeEnd: number } | undefined {
  let lastBad = -1;
  let piece = -1;
  let eq = -1;
  for (let i = start; i <= close; i++) {
    const c = i === close ? COMMA : message.charCodeAt(i);
    if (c === COMMA) {
      if (piece >= 0 && eq <= piece + 1) lastBad = piece;
      piece = i;
      eq = -1;
    } else if (c === EQUALS && eq < 0) {
      eq = i;
    }
  }
  for (let at = start; at >= 0 && at < close; at = message.indexOf(OPEN, at + OPEN.length)) {
    let typeEnd = at + OPEN.length;
    while (isTypeChar(message.charCodeAt(typeEnd))) typeEnd++;
    if (typeEnd === at + OPEN.length) continue;
    if (typeEnd === close || (message.charCodeAt(typeEnd) === COMMA && typeEnd > lastBad)) return { at, typeEnd };
  }
  return undefined;
}
