import { hash } from 'node:crypto';
import { customAlphabet } from 'nanoid';
import type { BufferedPart } from '../events/inbound.js';

const alphabet = '-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz';
const randomPart = customAlphabet(alphabet, 13);

/**
 * Ids of output events: 21 URL-safe characters like a nanoid, but the first 8 encode the
 * creation time (in an alphabet that sorts in ASCII order), so ids sort by creation and the
 * store's id index grows at its end instead of taking a random page write per message.
 * 13 random characters (78 bits) keep ids of one millisecond apart.
 */
export function outputId(now: number): string {
  const ms = Math.floor(now);
  if (ms !== lastMs) {
    lastMs = ms;
    lastPrefix = timePrefix(ms);
  }
  return lastPrefix + randomPart();
}

/**
 * The id of a batch's output, from what the batch holds: its buffer and, for each part, when it
 * arrived, its channel and its event id (all kept with the part in the store). A batch flushed
 * again because the store lost its first commit (a failover to a replica that lagged, a backup
 * restored) holds the same parts and gets the same id, so the agent can dedup it on
 * `webhook-id`; the same message ids arriving another time (a platform's retry past its dedup
 * window) are another batch. Time-prefixed like `outputId`, by the first part's arrival.
 */
export function batchOutputId(debounceKey: string, parts: readonly BufferedPart[]): string {
  // One string hashed at once (what the parts' updates to one hash would read), its digest read
  // as a string of bytes, the id written as bytes and read as one string: a Hash object, a
  // Buffer and a string per character cost more than the digest (bench/pipeline.mjs).
  let text = debounceKey;
  for (const part of parts) text += `\u0000${part.receivedAt}\u0000${part.event.channel}\u0000${part.event.id}`;
  const digest = hash('sha256', text, 'binary');
  writePrefix(Math.floor(parts[0]?.receivedAt ?? 0));
  for (let i = 0; i < 13; i++) scratch[8 + i] = CODES[digest.charCodeAt(i) % 64] as number;
  return scratch.toString('latin1', 0, 21);
}

/** Many ids share a millisecond under load: its prefix is built once. */
let lastMs = -1;
let lastPrefix = '';

/** The alphabet's character codes, by digit. */
const CODES = Uint8Array.from(alphabet, (char) => char.charCodeAt(0));
/** An id's characters, written here before they are read as its string (ids are ASCII). */
const scratch = Buffer.alloc(21);

/** The 8 time characters of `ms`, written at the start of `scratch`. */
function writePrefix(ms: number): void {
  let rest = ms;
  for (let i = 7; i >= 0; i--) {
    scratch[i] = CODES[rest % 64] as number;
    rest = Math.floor(rest / 64);
  }
}

function timePrefix(ms: number): string {
  writePrefix(ms);
  return scratch.toString('latin1', 0, 8);
}
