import { createHash } from 'node:crypto';
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
  const hash = createHash('sha256').update(debounceKey);
  for (const part of parts) hash.update(`\u0000${part.receivedAt}\u0000${part.event.channel}\u0000${part.event.id}`);
  const digest = hash.digest();
  let rest = '';
  for (let i = 0; i < 13; i++) rest += alphabet[(digest[i] as number) % 64];
  return timePrefix(Math.floor(parts[0]?.receivedAt ?? 0)) + rest;
}

/** Many ids share a millisecond under load: its prefix is built once. */
let lastMs = -1;
let lastPrefix = '';

function timePrefix(ms: number): string {
  const chars = new Array<string>(8);
  let rest = ms;
  for (let i = 7; i >= 0; i--) {
    chars[i] = alphabet[rest % 64] as string;
    rest = Math.floor(rest / 64);
  }
  return chars.join('');
}
