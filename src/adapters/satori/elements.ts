import type { MediaRef, MediaType, Segment } from '../../events/inbound.js';

/*
 * Satori message elements (satori.chat/en-US/protocol/elements.html): an XHTML-like string
 * such as `<quote id="m1"><author id="10001"/>old</quote><at id="10001"/> hi <img src="…"/>`.
 * One pass, left to right, with no backtracking: a `<` that does not open a well-formed tag is
 * text, and the characters a failed tag read are at most those up to the next `<`, so a hostile
 * content costs time in proportion to its length. Segments come out as OneBot gives them for
 * the same message (`at` with `qq`, `image` with `url`, `face` with `id`), so a Satori login and
 * a OneBot bot in one QQ group give one content signature (src/correlate/signature.ts).
 */

/** What a message's content holds. */
export interface Elements {
  segments: Segment[];
  /** The message quoted: its id, and its author and text when the element carries them. */
  quote?: { id: string; senderId?: string; text?: string };
  /** `internal:` resources, fetched through the server's proxy (`<url>/v1/proxy/<src>`). */
  media: MediaRef[];
}

/** Elements whose children are not the message's own text: their content is read apart or dropped. */
const OPAQUE = new Set(['quote', 'face', 'message', 'author', 'button']);
const MEDIA: ReadonlyMap<string, { segment: Segment['type']; media: MediaType }> = new Map([
  ['img', { segment: 'image', media: 'image' }],
  ['image', { segment: 'image', media: 'image' }],
  ['audio', { segment: 'record', media: 'audio' }],
  ['video', { segment: 'video', media: 'video' }],
  ['file', { segment: 'file', media: 'document' }],
]);

const NAMED: ReadonlyMap<string, string> = new Map([
  ['quot', '"'],
  ['amp', '&'],
  ['lt', '<'],
  ['gt', '>'],
  ['apos', "'"],
  ['nbsp', '\u00a0'],
]);

/** `&quot;`, `&amp;`, `&lt;`, `&gt;`, `&apos;`, `&#NN;`, `&#xHH;` decoded; any other `&` stays as it is. */
export function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  let out = '';
  let from = 0;
  // The next `;` is found once per stretch, so a text of many `&` and no `;` stays one pass.
  let end = -1;
  for (let at = text.indexOf('&'); at !== -1; at = text.indexOf('&', at + 1)) {
    if (end <= at) end = text.indexOf(';', at + 1);
    if (end === -1) break;
    // An entity is short: a `;` further than 10 characters away ends none.
    if (end - at > 10) continue;
    const name = text.slice(at + 1, end);
    const value = NAMED.get(name) ?? numeric(name);
    if (value === undefined) continue;
    out += text.slice(from, at) + value;
    from = end + 1;
    at = end;
  }
  return out + text.slice(from);
}

/** `#NN` or `#xHH` as its character; undefined when it is neither or past U+10FFFF. */
function numeric(name: string): string | undefined {
  const hex = /^#[xX]([0-9a-fA-F]{1,6})$/.exec(name)?.[1];
  const dec = hex === undefined ? /^#([0-9]{1,7})$/.exec(name)?.[1] : undefined;
  const code = hex !== undefined ? parseInt(hex, 16) : dec !== undefined ? parseInt(dec, 10) : Number.NaN;
  return code <= 0x10ffff ? String.fromCodePoint(code) : undefined;
}

const isNameStart = (code: number) =>
  (code >= 97 && code <= 122) || (code >= 65 && code <= 90) || code === 95 || code > 127;
const isNameChar = (code: number) => isNameStart(code) || (code >= 48 && code <= 57) || code === 45 || code === 58;
const isSpace = (code: number) => code === 32 || code === 9 || code === 10 || code === 13;

/** One tag read at `<`: where it ends (after `>`), or undefined when the `<` opens no well-formed tag. */
interface Tag {
  end: number;
  name: string;
  closing: boolean;
  selfClosing: boolean;
  attrs: Map<string, string>;
}

/**
 * Read the tag at `start` (a `<`). Stops, undefined, at the first character a tag cannot hold
 * there; a quoted value may not hold a `<` (Satori escapes it), so no read passes the next `<`.
 */
function readTag(content: string, start: number): Tag | undefined {
  let at = start + 1;
  const closing = content.charCodeAt(at) === 47; // '/'
  if (closing) at++;
  const nameStart = at;
  if (!isNameStart(content.charCodeAt(at))) return undefined;
  while (at < content.length && isNameChar(content.charCodeAt(at))) at++;
  const name = content.slice(nameStart, at).toLowerCase();
  const attrs = new Map<string, string>();
  for (;;) {
    while (at < content.length && isSpace(content.charCodeAt(at))) at++;
    const code = content.charCodeAt(at);
    if (code === 62) return { end: at + 1, name, closing, selfClosing: false, attrs }; // '>'
    if (code === 47 && content.charCodeAt(at + 1) === 62)
      return { end: at + 2, name, closing, selfClosing: true, attrs };
    if (closing || !isNameStart(code)) return undefined;
    const keyStart = at;
    while (at < content.length && isNameChar(content.charCodeAt(at))) at++;
    const key = content.slice(keyStart, at);
    while (at < content.length && isSpace(content.charCodeAt(at))) at++;
    if (content.charCodeAt(at) !== 61) {
      // A bare attribute is true (`<message forward>`).
      attrs.set(key, '');
      continue;
    }
    at++;
    while (at < content.length && isSpace(content.charCodeAt(at))) at++;
    const quote = content.charCodeAt(at);
    if (quote !== 34 && quote !== 39) return undefined;
    const valueStart = ++at;
    while (at < content.length && content.charCodeAt(at) !== quote) {
      if (content.charCodeAt(at) === 60) return undefined; // '<'
      at++;
    }
    if (at >= content.length) return undefined;
    attrs.set(key, decodeEntities(content.slice(valueStart, at)));
    at++;
  }
}

/** What is read inside an opaque element (a quote's author and text). */
interface Inside {
  name: string;
  attrs: Map<string, string>;
  depth: number;
  text: string;
  authorId: string | undefined;
}

/**
 * The segments, quote and media of a Satori content string. A resource is a `MediaRef` with
 * `url` for an `http(s):` src, with `ref` (the src itself) for an `internal:` one, which the
 * adapter resolves through the server's proxy; any other src (`data:`, `file:`) is not fetched.
 */
export function readElements(content: string): Elements {
  const segments: Segment[] = [];
  const media: MediaRef[] = [];
  let quote: Elements['quote'];
  let inside: Inside | undefined;
  let text = '';
  const flush = (): void => {
    if (text) segments.push({ type: 'text', data: { text: decodeEntities(text) } });
    text = '';
  };
  const element = (name: string, attrs: Map<string, string>): void => {
    const kind = MEDIA.get(name);
    if (kind) {
      flush();
      const src = attrs.get('src') ?? attrs.get('url') ?? '';
      const data: Record<string, string> = {};
      if (src) data.url = src;
      const title = attrs.get('title');
      if (title) data.name = title;
      segments.push({ type: kind.segment, data });
      const mime = attrs.get('type') ?? attrs.get('mime');
      const fileName = title ? { fileName: title } : {};
      const mimeType = mime?.includes('/') ? { mimeType: mime } : {};
      if (/^https?:\/\//i.test(src)) media.push({ url: src, type: kind.media, ...fileName, ...mimeType });
      else if (src.startsWith('internal:')) media.push({ ref: src, type: kind.media, ...fileName, ...mimeType });
      return;
    }
    switch (name) {
      case 'at': {
        flush();
        const type = attrs.get('type');
        if (type === 'all' || type === 'here') segments.push({ type: 'at', data: { qq: 'all' } });
        else {
          const id = attrs.get('id');
          const data: Record<string, string> = id ? { qq: id } : {};
          const label = attrs.get('name');
          if (label) data.name = label;
          if (id || attrs.get('role')) segments.push({ type: 'at', data });
        }
        return;
      }
      case 'br':
        text += '\n';
        return;
      case 'sharp': {
        const label = attrs.get('name') ?? attrs.get('id');
        if (label) text += `#${label}`;
        return;
      }
    }
  };

  let at = 0;
  while (at < content.length) {
    const lt = content.indexOf('<', at);
    const stop = lt === -1 ? content.length : lt;
    if (inside) inside.text += content.slice(at, stop);
    else text += content.slice(at, stop);
    if (lt === -1) break;
    const tag = readTag(content, lt);
    if (!tag) {
      // Not a tag: the `<` is text, and reading goes on after it.
      if (inside) inside.text += '<';
      else text += '<';
      at = lt + 1;
      continue;
    }
    at = tag.end;
    if (inside) {
      if (tag.name === inside.name && !tag.selfClosing) inside.depth += tag.closing ? -1 : 1;
      if ((tag.name === 'author' || tag.name === 'user') && !tag.closing) inside.authorId ??= tag.attrs.get('id');
      if (inside.depth > 0) continue;
      if (inside.name === 'quote') quote = quoteOf(inside.attrs, inside);
      inside = undefined;
      continue;
    }
    if (tag.closing) {
      if (tag.name === 'p') text += '\n';
      continue;
    }
    if (tag.name === 'p' && (text !== '' || segments.length > 0) && !text.endsWith('\n')) text += '\n';
    if (OPAQUE.has(tag.name)) {
      if (tag.name === 'face') {
        flush();
        segments.push({ type: 'face', data: { id: tag.attrs.get('id') ?? '' } });
      } else if (tag.name === 'message') {
        flush();
        const id = tag.attrs.get('id');
        // A forward (`<message forward>`), as OneBot's `forward` segment.
        segments.push({
          type: 'other',
          data: { type: tag.attrs.has('forward') ? 'forward' : 'message', ...(id ? { id } : {}) },
        });
      }
      if (tag.selfClosing) {
        if (tag.name === 'quote') quote = quoteOf(tag.attrs, undefined);
        continue;
      }
      inside = { name: tag.name, attrs: tag.attrs, depth: 1, text: '', authorId: undefined };
      continue;
    }
    element(tag.name, tag.attrs);
  }
  // An element never closed: what it held is dropped; a quote still names its message.
  if (inside?.name === 'quote') quote = quoteOf(inside.attrs, inside);
  flush();
  return { segments, media, ...(quote ? { quote } : {}) };
}

function quoteOf(attrs: Map<string, string>, inside: Inside | undefined): Elements['quote'] {
  const id = attrs.get('id');
  if (!id) return undefined;
  const text = inside ? decodeEntities(inside.text).replace(/\s+/g, ' ').trim() : '';
  return {
    id,
    ...(inside?.authorId ? { senderId: inside.authorId } : {}),
    ...(text ? { text } : {}),
  };
}

/** The text an agent reads: the text segments, each run of blanks on a line folded, lines kept. */
export function plainText(segments: readonly Segment[]): string {
  let text = '';
  for (const segment of segments) if (segment.type === 'text') text += segment.data.text ?? '';
  return text
    .split('\n')
    .map((line) => line.replace(/[ \t\r\f\v]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
