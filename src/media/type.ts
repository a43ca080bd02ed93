import { fileTypeFromBuffer } from 'file-type';
import mime from 'mime';
import { mediaTypeOf, type MediaType } from '../events/inbound.js';

/** What a downloaded file is stored as. */
export interface StoredType {
  type: MediaType;
  mime: string;
  /** File extension, without the dot. */
  extension: string;
}

/**
 * Declared types kept when sniffing finds nothing: passive text, which no viewer runs.
 * Everything else that sniffing cannot confirm (HTML, SVG, XHTML, XML, JavaScript, or an image
 * type on bytes that are no image) is stored as opaque bytes.
 */
const PASSIVE_TEXT = new Set([
  'text/plain',
  'text/csv',
  'text/tab-separated-values',
  'text/markdown',
  'application/json',
]);

/** Sniffable formats a browser or viewer may execute (file-type recognises XML, Flash, CHM). */
const ACTIVE = /html|xml|script|flash|postscript/;

const OPAQUE: StoredType = { type: 'document', mime: 'application/octet-stream', extension: 'bin' };

/**
 * The type of a file from its first bytes. Only a sniffed image, audio or video signature makes
 * a file that type; the declared type (from the webhook or the server, both untrusted) only
 * names passive text, and anything else is an opaque `.bin` document.
 */
export async function storedType(head: Buffer, declared: string | undefined): Promise<StoredType> {
  const sniffed = head.length > 0 ? await fileTypeFromBuffer(head).catch(() => undefined) : undefined;
  if (sniffed && !ACTIVE.test(sniffed.mime))
    return { type: mediaTypeOf(sniffed.mime), mime: sniffed.mime, extension: sniffed.ext };
  const base = declared?.split(';')[0]?.trim().toLowerCase();
  if (!sniffed && base && PASSIVE_TEXT.has(base))
    return { type: 'document', mime: base, extension: mime.getExtension(base) ?? 'txt' };
  return OPAQUE;
}
