import type { MediaRef, MediaType } from '../../events/inbound.js';
import { own, type Json, type PayloadReader } from '../kit/shape.js';

/** The Bot API serves files up to 20 MB (core.telegram.org/bots/api#getfile). */
export const BOT_API_FILE_LIMIT = 20 * 1024 * 1024;

const fileKinds: Array<[string, MediaType]> = [
  ['document', 'document'],
  ['audio', 'audio'],
  ['voice', 'audio'],
  ['video', 'video'],
  ['video_note', 'video'],
  ['animation', 'video'],
  ['sticker', 'image'],
];

/** One Telegram file object (PhotoSize, Document, ...) as a media reference. */
function fileRef(read: PayloadReader, file: Json, at: string, type: MediaType): MediaRef | undefined {
  const ref = read.optText(own(file, 'file_id'), `${at}.file_id`);
  if (!ref) return undefined;
  const mimeType = read.optText(own(file, 'mime_type'), `${at}.mime_type`);
  const size = read.optNumber(own(file, 'file_size'), `${at}.file_size`);
  const hash = read.optText(own(file, 'file_unique_id'), `${at}.file_unique_id`);
  const fileName = read.optText(own(file, 'file_name'), `${at}.file_name`);
  return {
    ref,
    type,
    ...(mimeType ? { mimeType } : {}),
    ...(size ? { size } : {}),
    ...(hash ? { hash } : {}),
    ...(fileName ? { fileName } : {}),
  };
}

/** A message's attachments: its largest photo, and each file it carries. */
export function mediaOf(read: PayloadReader, message: Json, at: string): MediaRef[] {
  const media: MediaRef[] = [];
  // Photos come in several sizes; take the largest.
  let largest: { area: number; ref: MediaRef } | undefined;
  const photos = read.optArray(own(message, 'photo'), `${at}.photo`);
  for (let i = 0; i < photos.length; i++) {
    const size = read.object(photos[i], `${at}.photo[${i}]`, 'a PhotoSize object {file_id, width, height}');
    const ref = fileRef(read, size, `${at}.photo[${i}]`, 'image');
    const area =
      read.optNumber(own(size, 'file_size'), `${at}.photo[${i}].file_size`) ??
      (read.optNumber(own(size, 'width'), `${at}.photo[${i}].width`) ?? 0) *
        (read.optNumber(own(size, 'height'), `${at}.photo[${i}].height`) ?? 0);
    if (ref && (!largest || area > largest.area)) largest = { area, ref };
  }
  if (largest) media.push(largest.ref);
  // Most messages are text: a kind absent is skipped before its path is spelled for an error.
  for (const [field, type] of fileKinds) {
    const value = own(message, field);
    if (value === undefined || value === null) continue;
    const ref = fileRef(read, read.object(value, `${at}.${field}`), `${at}.${field}`, type);
    if (ref) media.push(ref);
  }
  return media;
}
