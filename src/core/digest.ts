import { hash } from 'node:crypto';

/**
 * A 96-bit digest of a text, as 16 base64url characters: fixed-size keys keep claim tables and
 * correlation keys small whatever the platform's ids look like, and no id collides by spelling.
 * One-shot `crypto.hash`: no hash object to build and finish per short input.
 */
export function digest(text: string): string {
  return hash('sha256', text, 'base64url').slice(0, 16);
}

const md5Pattern = /\b([0-9a-fA-F]{32})\b/;

/** The md5 that QQ implementations put in image file names and URLs, lower-cased, if any. */
export function md5InName(name: string | undefined): string | undefined {
  return name?.match(md5Pattern)?.[1]?.toLowerCase();
}
